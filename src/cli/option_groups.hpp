#pragma once
// The sections of a subcommand's options, as `kotml SUB --help` prints them:
// what is read, what is modelled, how it is solved, how it is spread over
// ranks and memory, and what is written. A subcommand (and every shared
// declare_*_options) puts each option into its section; the parser sees one
// flat description (options_of in src/cli/parse.hpp), so the INI files,
// the shell completion and the command line treat every section alike.

#include <boost/program_options.hpp>

#include <vector>

namespace kotml {

struct OptionGroups {
  boost::program_options::options_description input{"Input"};
  boost::program_options::options_description model{"Model"};
  boost::program_options::options_description solver{"Solver"};
  boost::program_options::options_description parallel{"Parallel and memory"};
  boost::program_options::options_description output{"Output"};

  /// The sections in the order --help prints them.
  std::vector<const boost::program_options::options_description*> in_order() const {
    return {&input, &model, &solver, &parallel, &output};
  }
};

}  // namespace kotml
