// Fuzzes the INI reader behind `--config`: the input is an INI file, read for
// the subcommand its first [section] names (train when none does), exactly as
// `kotml <subcommand> --config FILE` reads it, then notified (defaults and
// typed values). libFuzzer's own byte mutations apply: INI is plain text.

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "parse.hpp"
#include "subcommand.hpp"

namespace {

using namespace kotml;

const cli::Subcommand& subcommand_for(const std::string& text, const std::vector<cli::Subcommand>& all) {
  const cli::Subcommand* chosen = nullptr;
  for (const auto& s : all)
    if (s.name == "train") chosen = &s;
  std::size_t first = std::string::npos;
  for (const auto& s : all) {
    const auto at = text.find("[" + s.name + "]");
    if (at < first) {
      first = at;
      chosen = &s;
    }
  }
  return *chosen;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  fuzz::initialise(argc, argv);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const auto subcommands = cli::all_subcommands();
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto& sub = subcommand_for(text, subcommands);
  fuzz::expect_only_user_errors([&] {
    cli::po::positional_options_description positional;
    const auto desc = cli::options_of(sub, positional);
    cli::po::variables_map vm;
    std::istringstream in(text);
    cli::store_config(in, "fuzz.ini", sub, desc, subcommands, vm);
    cli::notify_options(vm);
  });
  return 0;
}
