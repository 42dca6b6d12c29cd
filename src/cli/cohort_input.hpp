#pragma once
// Glue shared by the learning and evaluation subcommands (train, train-test,
// test, distances): the cohort from --input or from a built-in simulated cohort
// (--builtin, what the demo runs), and the output folder. Header-only: only the
// program links Boost.Program_options.

#include <boost/program_options.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "kotml/core/atomic_file.hpp"
#include "kotml/core/error.hpp"
#include "kotml/data/cohort.hpp"
#include "cohort_options.hpp"
#include "kotml/dist/comm.hpp"
#include "option_groups.hpp"

namespace kotml::learn {

inline void declare_builtin_option(OptionGroups& groups) {
  groups.input.add_options()
      ("builtin", boost::program_options::value<std::string>()->default_value(""),
                     "use a built-in simulated cohort instead of --input: toy2d (GGML-OT's 2-D benchmark, "
                     "3 classes x 10 donors x 300 cells), gmm (6 donors, 10-D) or scrna (2 x 10 donors, "
                     "1000 genes); simulated with --seed");
}

/// The cohort options from the command line; with --builtin, --input must be
/// absent and every other cohort option applies to the simulated cells.
inline data::CohortOptions cohort_options_or_builtin(const boost::program_options::variables_map& vm) {
  const std::string builtin = vm["builtin"].as<std::string>();
  if (builtin.empty()) return data::cohort_options_from(vm);
  if (vm.count("input") && !vm["input"].as<std::string>().empty())
    throw Error::option("builtin", "give either --input or --builtin, not both");
  // Built-in cohorts are small: every cell unless --n-cells is given.
  data::CohortOptions o = data::cohort_options_except_source(vm, true);
  o.builtin = data::parse_builtin_cohort(builtin);
  o.validate();
  return o;
}

/// Creates the output folder on rank 0 (collective, errors agreed).
inline void prepare_output_dir(const std::string& dir, const dist::Comm& comm) {
  comm.phase([&] {
    if (comm.is_root()) make_directories(dir);
  });
}

}  // namespace kotml::learn
