#pragma once
// Glue shared by the learning and evaluation subcommands (train, train-test,
// test, distances): the cohort from --input or from a built-in simulated cohort
// (--builtin, what the demo runs), and the output folder. Header-only: only the
// program links Boost.Program_options.

#include <boost/program_options.hpp>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "kotml/core/atomic_file.hpp"
#include "kotml/core/error.hpp"
#include "kotml/data/cell_source.hpp"
#include "kotml/data/cohort.hpp"
#include "kotml/data/cohort_options.hpp"
#include "kotml/data/simulate.hpp"
#include "kotml/dist/comm.hpp"
#include "kotml/core/option_groups.hpp"

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
  if (builtin != "toy2d" && builtin != "gmm" && builtin != "scrna")
    throw Error::option("builtin", "must be toy2d, gmm or scrna, got '" + builtin + "'");
  if (vm.count("input") && !vm["input"].as<std::string>().empty())
    throw Error::option("builtin", "give either --input or --builtin, not both");
  data::CohortOptions o;
  o.input = "builtin:" + builtin;
  o.patient_col = vm["patient-col"].as<std::string>();
  o.label_col = vm["label-col"].as<std::string>();
  o.use_rep = vm["use-rep"].as<std::string>();
  o.layer = vm["layer"].as<std::string>();
  const std::string n_cells = vm["n-cells"].as<std::string>();
  // Built-in cohorts are small: every cell unless --n-cells is given.
  if (vm["n-cells"].defaulted() || n_cells == "all") {
    o.all_cells = true;
  } else {
    try {
      std::size_t used = 0;
      o.n_cells = std::stoll(n_cells, &used);
      if (used != n_cells.size()) throw std::invalid_argument(n_cells);
    } catch (const std::exception&) {
      throw Error::option("n-cells", "must be a positive integer or 'all', got '" + n_cells + "'");
    }
  }
  o.keep_small_donors = vm["keep-small-donors"].as<bool>();
  o.group_by = vm["group-by"].as<std::string>();
  o.normalize = vm["normalize"].as<bool>();
  o.seed = vm["seed"].as<std::uint64_t>();
  o.validate();
  return o;
}

/// A cohort read in two steps: planned (metadata, on every rank) when made,
/// then the points of the donors each rank needs loaded on demand, from the
/// .h5ad or from the built-in simulated cohort it keeps. A rank loads only
/// what its placement asks (learn::donors_to_hold,
/// eval::distance_donors_to_hold), so its memory falls as ranks grow.
class CohortReader {
 public:
  /// Collective: plans the cohort.
  CohortReader(const data::CohortOptions& options, const dist::Comm& comm) : comm_(comm) {
    const std::string prefix = "builtin:";
    if (options.input.compare(0, prefix.size(), prefix) != 0) {
      comm.phase([&] {
        options.validate();
        source_ = std::make_unique<data::AnnDataSource>(options.input);
      });
    } else {
      const std::string kind = options.input.substr(prefix.size());
      data::SimulatedData simulated;
      comm.phase([&] {
        if (kind == "toy2d") {
          data::Toy2dOptions o;
          o.seed = options.seed;
          simulated = data::simulate_toy2d(o);
        } else if (kind == "gmm") {
          data::GmmOptions o;
          o.seed = options.seed;
          simulated = data::simulate_gmm(o);
        } else {
          data::ScrnaOptions o;
          o.seed = options.seed;
          simulated = data::simulate_scrna(o);
        }
      });
      source_ = std::make_unique<data::TableSource>(simulated.table());
    }
    cohort_ = data::plan_cohort(*source_, options, comm);
  }

  const data::Cohort& cohort() const { return cohort_; }

  /// Collective: this rank holds the points of exactly `which` (cohort
  /// indices) afterwards: missing donors are read, others released.
  void hold(const std::vector<GlobalId>& which) {
    data::release_donors(cohort_, which);
    data::load_donors(cohort_, *source_, which, comm_);
  }
  /// Collective: every donor on every rank.
  void hold_all() {
    std::vector<GlobalId> all;
    for (GlobalId u = 0; u < cohort_.n_donors(); ++u) all.push_back(u);
    hold(all);
  }

 private:
  const dist::Comm& comm_;
  std::unique_ptr<data::CellSource> source_;
  data::Cohort cohort_;
};

/// The sorted union of two sorted donor lists.
inline std::vector<GlobalId> merged(const std::vector<GlobalId>& a, const std::vector<GlobalId>& b) {
  std::vector<GlobalId> both;
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
  return both;
}

/// Creates the output folder on rank 0 (collective, errors agreed).
inline void prepare_output_dir(const std::string& dir, const dist::Comm& comm) {
  comm.phase([&] {
    if (comm.is_root()) make_directories(dir);
  });
}

}  // namespace kotml::learn
