#include "options.hpp"

#include <iostream>

#include "kotml/core/atomic_file.hpp"
#include "kotml/core/json_text.hpp"
#include "kotml/core/log.hpp"
#include "kotml/core/progress.hpp"
#include "kotml/dist/timer_summary.hpp"

namespace kotml::cli {

std::string one_of(const po::variables_map& vm, const std::string& name,
                   const std::vector<std::string>& choices) {
  const auto value = vm[name].as<std::string>();
  for (const auto& c : choices)
    if (value == c) return value;
  std::string list;
  for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
  throw Error::option(name, "must be one of " + list + ", got '" + value + "'");
}

std::vector<OutputFile> out_folder_files(const std::string& out, std::initializer_list<const char*> names) {
  std::vector<OutputFile> files;
  for (const char* name : names) files.push_back({"out", out + "/" + name, true});
  return files;
}

void check_outputs(const dist::Comm& comm, const std::vector<std::string>& inputs, const std::vector<OutputFile>& files,
                   const std::string& folder_option, const std::string& folder) {
  comm.phase([&] {
    if (!folder_option.empty()) check_output_directory(folder, folder_option);
    for (const auto& file : files)
      if (!file.path.empty()) check_output_path(file.path, inputs, file.option, file.in_created_folder);
  });
}

void report_timers(const dist::Comm& comm, const std::string& command, const std::string& json_path) {
  const dist::TimerSummary summary = dist::summarize_timers(comm);
  if (comm.is_root() && log::progress_mode() != log::ProgressMode::quiet) {
    log::clear_progress_line();
    std::cerr << dist::timer_table(summary, command) << std::endl;
  }
  comm.phase([&] {
    if (comm.is_root() && !json_path.empty())
      write_text_atomically(json_path, json_text(dist::to_json(summary), 2) + "\n");
  });
}

void declare_timers_option(po::options_description& output) {
  output.add_options()("timers", po::value<std::string>()->default_value(""),
                       "also write the time per phase (min/mean/max over ranks) as JSON to this file");
}

}  // namespace kotml::cli
