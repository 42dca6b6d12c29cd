#pragma once
// Validation helpers shared by subcommands: each check that fails throws an Error
// naming the option, so a bad value becomes one clear line and exit code 2.

#include <boost/program_options.hpp>

#include <cmath>
#include <string>
#include <initializer_list>
#include <type_traits>
#include <vector>

#include "kotml/core/error.hpp"
#include "kotml/core/progress.hpp"
#include "kotml/dist/comm.hpp"

namespace kotml::cli {

namespace po = boost::program_options;

template <class T>
T option(const po::variables_map& vm, const std::string& name) {
  return vm[name].as<T>();
}

inline bool has(const po::variables_map& vm, const std::string& name) {
  return vm.count(name) > 0 && !vm[name].defaulted();
}

/// An option's value in a message: integers as they are, floating-point values
/// in six significant digits (log::number_text), so that 1e-9 is not "0.000000".
template <class T>
std::string value_text(T value) {
  if constexpr (std::is_floating_point<T>::value)
    return log::number_text(static_cast<double>(value));
  else
    return std::to_string(value);
}

template <class T>
T positive(const po::variables_map& vm, const std::string& name) {
  const T value = vm[name].as<T>();
  if (!(value > T(0)) || !std::isfinite(static_cast<double>(value)))
    throw Error::option(name, "must be positive, got " + value_text(value));
  return value;
}

template <class T>
T non_negative(const po::variables_map& vm, const std::string& name) {
  const T value = vm[name].as<T>();
  if (!(value >= T(0)) || !std::isfinite(static_cast<double>(value)))
    throw Error::option(name, "must be zero or positive, got " + value_text(value));
  return value;
}

template <class T>
T in_range(const po::variables_map& vm, const std::string& name, T lo, T hi) {
  const T value = vm[name].as<T>();
  if (!(value >= lo && value <= hi))
    throw Error::option(name, "must be in [" + value_text(lo) + ", " + value_text(hi) + "], got " + value_text(value));
  return value;
}

/// The value of a string option that must be one of the choices.
std::string one_of(const po::variables_map& vm, const std::string& name,
                   const std::vector<std::string>& choices);

/// One file a subcommand will write: the option that names it and its path.
struct OutputFile {
  std::string option;
  std::string path;
  bool in_created_folder = false;  // inside an --out folder the command creates
};

/// The files `names` inside the folder of --out, which the command creates.
std::vector<OutputFile> out_folder_files(const std::string& out, std::initializer_list<const char*> names);

/// The files of an evaluation run in --out (eval and learn write them).
inline std::vector<OutputFile> evaluation_outputs(const std::string& out) {
  return out_folder_files(out, {"metrics.csv", "summary.json", "results.h5", "timers.json"});
}

/// Before any work, on every rank (one agreed phase): the output folder (if
/// any) can be created or written, and every output file can be written and is
/// none of the inputs (kotml/core/atomic_file.hpp). Empty paths are skipped.
void check_outputs(const dist::Comm& comm, const std::vector<std::string>& inputs, const std::vector<OutputFile>& files,
                   const std::string& folder_option = "", const std::string& folder = "");

/// The end of a timed command (collective): the phase timers of every rank as
/// one table (kotml/dist/timer_summary.hpp), printed on stderr by rank 0 unless
/// --quiet, and written as JSON to `json_path` (rank 0, atomically) unless it
/// is empty. The path must have been checked with the command's outputs.
void report_timers(const dist::Comm& comm, const std::string& command, const std::string& json_path);

/// --timers FILE: the option of the commands that write no --out folder.
void declare_timers_option(po::options_description& output);

}  // namespace kotml::cli
