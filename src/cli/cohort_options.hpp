#pragma once
// The cohort options shared by every subcommand that builds a cohort (train,
// train-test, test, distances): one declaration, one reader, so their names,
// defaults and checks never drift apart. Header-only because only the program
// (which links Boost.Program_options) uses it.
//
//   kotml::OptionGroups groups;  kotml::data::declare_cohort_options(groups);
//   ...
//   const auto options = kotml::data::cohort_options_from(vm);   // validated

#include <boost/program_options.hpp>

#include <cstdint>
#include <string>

#include "kotml/core/error.hpp"
#include "option_groups.hpp"
#include "kotml/data/cohort.hpp"

namespace kotml::data {

/// Adds --input (also the first positional argument when `positional` is given),
/// --patient-col, --label-col, --use-rep, --layer, --n-cells, --keep-small-donors,
/// --group-by, --normalize and --seed.
inline void declare_cohort_options(OptionGroups& groups,
                                   boost::program_options::positional_options_description* positional =
                                       nullptr) {
  namespace po = boost::program_options;
  const CohortOptions d;
  groups.input.add_options()
      ("input", po::value<std::string>(), "input .h5ad file (cells × features)")
      ("patient-col", po::value<std::string>()->default_value(d.patient_col),
       "obs column with the donor (patient) id")
      ("label-col", po::value<std::string>()->default_value(d.label_col),
       "obs column with the donor's class label")
      ("use-rep", po::value<std::string>()->default_value(""),
       "features from this obsm embedding (e.g. X_pca) instead of X")
      ("layer", po::value<std::string>()->default_value(""),
       "features from this layer instead of X")
      ("n-cells", po::value<std::string>()->default_value(std::to_string(d.n_cells)),
       "cells drawn per donor without replacement, or 'all'")
      ("keep-small-donors", po::bool_switch(),
       "keep donors with fewer than --n-cells cells (all their cells) instead of dropping them")
      ("group-by", po::value<std::string>()->default_value(""),
       "obs column (e.g. cell type): support = global group centroids, weights = group fractions")
      ("normalize", po::bool_switch(),
       "z-score features as GGML-OT normalize(): per-feature mean and unbiased SD (+1e-6) over all "
       "kept cells; with --group-by one scalar mean and SD over all centroid entries")
      ("seed", po::value<std::uint64_t>()->default_value(d.seed),
       "seed of the per-donor subsampling streams");
  if (positional) positional->add("input", 1);
}

/// The options declared above but the source (--input or a built-in cohort),
/// not yet validated. --n-cells left at its default means every cell when
/// every_cell_by_default (the small built-in cohorts), else its default count.
inline CohortOptions cohort_options_except_source(const boost::program_options::variables_map& vm,
                                                  bool every_cell_by_default) {
  CohortOptions o;
  o.patient_col = vm["patient-col"].as<std::string>();
  o.label_col = vm["label-col"].as<std::string>();
  o.use_rep = vm["use-rep"].as<std::string>();
  o.layer = vm["layer"].as<std::string>();
  const std::string n_cells = vm["n-cells"].as<std::string>();
  if (n_cells == "all" || (every_cell_by_default && vm["n-cells"].defaulted())) {
    o.all_cells = true;
  } else {
    std::size_t used = 0;
    long long value = 0;
    try {
      value = std::stoll(n_cells, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != n_cells.size())
      throw Error::option("n-cells", "must be a positive integer or 'all', got '" + n_cells + "'");
    o.n_cells = value;
  }
  o.keep_small_donors = vm["keep-small-donors"].as<bool>();
  o.group_by = vm["group-by"].as<std::string>();
  o.normalize = vm["normalize"].as<bool>();
  o.seed = vm["seed"].as<std::uint64_t>();
  return o;
}

/// Reads and validates the options declared above, an --input file required.
/// Throws Error::option.
inline CohortOptions cohort_options_from(const boost::program_options::variables_map& vm) {
  if (!vm.count("input") || vm["input"].as<std::string>().empty())
    throw Error::option("input", "an input .h5ad file is required");
  CohortOptions o = cohort_options_except_source(vm, false);
  o.input = vm["input"].as<std::string>();
  o.validate();
  return o;
}

}  // namespace kotml::data
