// kotml prep IN.h5ad -o OUT.h5ad: normalize_total + log1p, highly variable genes
// (scanpy's 'seurat' flavour) and PCA, as scanpy's standard preprocessing, written
// to a new .h5ad. Rank 0 does the work; other ranks wait for its verdict.

#include <algorithm>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "double_option.hpp"
#include "kotml/core/error.hpp"
#include "kotml/core/log.hpp"
#include "kotml/data/prep.hpp"
#include "options.hpp"
#include "subcommand.hpp"

namespace kotml::cli {
namespace {

/// The choice whose to_string is the option's value (one of them, else Error::option).
template <class Enum>
Enum named_choice(const po::variables_map& vm, const std::string& name, const std::vector<Enum>& choices) {
  std::vector<std::string> names;
  for (const Enum c : choices) names.push_back(data::to_string(c));
  const auto chosen = one_of(vm, name, names);
  return choices[static_cast<std::size_t>(std::find(names.begin(), names.end(), chosen) - names.begin())];
}

}  // namespace

Subcommand prep_subcommand() {
  Subcommand sub;
  sub.name = "prep";
  sub.summary = "normalise counts, select highly variable genes and compute PCA (scanpy's recipe)";
  sub.usage = "kotml prep IN.h5ad -o OUT.h5ad [--n-top-genes N] [--batch-key COL] [--n-comps K]";
  sub.example = "kotml prep counts.h5ad -o prepped.h5ad --n-top-genes 2000 --batch-key donor";
  sub.declare = [](OptionGroups& groups, po::positional_options_description& positional) {
    const data::PrepOptions d;
    groups.input.add_options()
        ("input", po::value<std::string>()->required(), "input .h5ad with counts in X (or --layer)")
        ("layer", po::value<std::string>()->default_value(""), "read the counts from this layer instead of X");
    groups.model.add_options()
        ("no-normalize", po::bool_switch(), "skip normalize_total + log1p (input already log-normalised)")
        ("target-sum", kotml::double_option(d.target_sum), "normalize_total: total per cell")
        ("no-hvg", po::bool_switch(), "skip highly-variable-gene selection: PCA on all genes")
        ("n-top-genes", po::value<std::int64_t>()->default_value(0),
         "number of highly variable genes (0: select by the mean/dispersion cutoffs)")
        ("min-mean", kotml::double_option(d.hvg.min_mean), "HVG cutoff (without --n-top-genes)")
        ("max-mean", kotml::double_option(d.hvg.max_mean), "HVG cutoff (without --n-top-genes)")
        ("min-disp", kotml::double_option(d.hvg.min_disp), "HVG cutoff (without --n-top-genes)")
        ("max-disp", po::value<double>()->default_value(std::numeric_limits<double>::infinity(), "inf"),
         "HVG cutoff (without --n-top-genes)")
        ("n-bins", po::value<std::int64_t>()->default_value(d.hvg.n_bins), "HVG: bins of mean expression")
        ("batch-key", po::value<std::string>()->default_value(""), "obs column: select HVGs per batch and merge")
        ("no-pca", po::bool_switch(), "skip PCA")
        ("n-comps", po::value<std::int64_t>(), "principal components (default: min(50, min(cells, genes) - 1))");
    groups.solver.add_options()
        ("pca-tol", kotml::double_option(d.pca.tol), "PCA: relative residual of the Ritz pairs")
        ("pca-block", po::value<std::int64_t>()->default_value(d.pca.block_size), "PCA: Lanczos block size")
        ("pca-max-basis", po::value<std::int64_t>()->default_value(0),
         "PCA: largest Lanczos basis (0: min(genes, max(20 n-comps, 400)))")
        ("pca-operator", po::value<std::string>()->default_value("auto"),
         "PCA: how A^T A is applied: gram (form the genes x genes matrix once), cells (a pass over the "
         "cells per block), auto (gram when it fits and costs less)")
        ("pca-solver", po::value<std::string>()->default_value("auto"),
         "PCA: lanczos (block Lanczos), dense (LAPACK on the Gram matrix), auto (dense when it costs less "
         "than the Lanczos iteration's largest basis)")
        ("seed", po::value<std::uint64_t>()->default_value(0), "seed of the PCA start block");
    groups.output.add_options()
        ("output,o", po::value<std::string>()->required(), "output .h5ad (written atomically)")
        ("no-counts-layer", po::bool_switch(), "do not keep the input counts as layers/counts")
        ("compression", po::value<int>()->default_value(0), "gzip level of the output matrices (0-9)");
    positional.add("input", 1);
  };
  sub.run = [](const po::variables_map& vm, const dist::Comm& comm) {
    data::PrepOptions o;
    o.input = vm["input"].as<std::string>();
    o.output = vm["output"].as<std::string>();
    o.layer = vm["layer"].as<std::string>();
    o.normalize = !vm["no-normalize"].as<bool>();
    o.target_sum = positive<double>(vm, "target-sum");
    o.keep_counts = !vm["no-counts-layer"].as<bool>();
    o.select_hvg = !vm["no-hvg"].as<bool>();
    o.hvg.n_top_genes = non_negative<std::int64_t>(vm, "n-top-genes");
    o.hvg.min_mean = option<double>(vm, "min-mean");
    o.hvg.max_mean = option<double>(vm, "max-mean");
    o.hvg.min_disp = option<double>(vm, "min-disp");
    o.hvg.max_disp = option<double>(vm, "max-disp");
    o.hvg.n_bins = positive<std::int64_t>(vm, "n-bins");
    o.batch_key = vm["batch-key"].as<std::string>();
    o.run_pca = !vm["no-pca"].as<bool>();
    if (vm.count("n-comps")) {
      o.n_comps_given = true;
      o.pca.n_comps = positive<std::int64_t>(vm, "n-comps");
    }
    o.pca.tol = positive<double>(vm, "pca-tol");
    o.pca.block_size = positive<std::int64_t>(vm, "pca-block");
    o.pca.max_basis = non_negative<std::int64_t>(vm, "pca-max-basis");
    o.pca.seed = vm["seed"].as<std::uint64_t>();
    o.pca.op = named_choice<data::PcaOperator>(
        vm, "pca-operator", {data::PcaOperator::automatic, data::PcaOperator::gram, data::PcaOperator::cells});
    o.pca.solver = named_choice<data::PcaSolver>(
        vm, "pca-solver", {data::PcaSolver::automatic, data::PcaSolver::lanczos, data::PcaSolver::dense});
    if (o.pca.op == data::PcaOperator::cells && o.pca.solver == data::PcaSolver::dense)
      throw Error::option("pca-solver", "dense needs the Gram matrix, but --pca-operator is cells");
    o.compression_level = in_range<int>(vm, "compression", 0, 9);
    check_outputs(comm, {o.input}, {{"output", o.output}});

    data::PrepReport report;
    comm.phase([&] {
      if (comm.is_root()) report = data::run_prep(o);
    });
    for (const auto& w : report.warnings) log::warn(w);
    std::ostringstream text;
    text << "prep: " << report.n_obs << " cells x " << report.n_vars << " genes";
    if (o.normalize) text << "; normalize_total(" << o.target_sum << ") + log1p";
    if (o.select_hvg) text << "; " << report.n_hvg << " highly variable genes";
    if (o.run_pca)
      text << "; PCA " << report.n_comps << " components ("
           << data::describe_pca_method(report.pca_solver, report.pca_operator, report.pca_basis) << ", "
           << (report.pca_converged ? "converged" : "NOT converged") << ", explained variance "
           << report.explained_variance << ")";
    text << "\nwrote " << o.output << "\n";
    log::out() << text.str();
    return exit_ok;
  };
  return sub;
}

}  // namespace kotml::cli
