#pragma once
// What the dispatcher knows about a subcommand. Each subcommand lives in its own
// src/cli/cmd_<name>.cpp and exposes one factory, listed in commands.cpp.

#include <boost/program_options.hpp>

#include <functional>
#include <string>
#include <vector>

#include "option_groups.hpp"
#include "kotml/dist/comm.hpp"

namespace kotml::cli {

namespace po = boost::program_options;

struct Subcommand {
  std::string name;
  std::string summary;  // one line for `kotml --help`
  std::string usage;    // e.g. "kotml info FILE.h5ad"
  /// One command line that works, shown under --help (option_groups.hpp
  /// has the sections the options are printed in).
  std::string example;
  /// Declares the subcommand's options, each in its section, and its positional
  /// arguments. Every option may also be set in the INI file given by --config.
  std::function<void(OptionGroups&, po::positional_options_description&)> declare;
  /// Runs on every rank, after MPI and Kokkos are up. Returns the exit code.
  /// Throws kotml::Error (or dist::CollectiveError) for problems the user can fix.
  std::function<int(const po::variables_map&, const dist::Comm&)> run;
};

/// Every subcommand, in the order `kotml --help` lists them.
std::vector<Subcommand> all_subcommands();

}  // namespace kotml::cli
