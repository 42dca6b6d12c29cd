#pragma once
// The training options shared by `kotml train` and `kotml train-test`: one
// declaration and one reader, so names, defaults and checks agree. Defaults are
// GGML-OT 0.9.92's train() defaults. Header-only because only the program links
// Boost.Program_options.

#include <boost/program_options.hpp>

#include <cstdint>
#include <string>

#include "double_option.hpp"
#include "kotml/learn/trainer.hpp"
#include "option_groups.hpp"

namespace kotml::learn {

inline void declare_train_options(OptionGroups& groups) {
  namespace po = boost::program_options;
  const TrainOptions d;
  groups.model.add_options()
      ("n-comps", po::value<std::int64_t>()->default_value(d.n_comps), "rows k of the metric A (k×d), k ≤ d (the default becomes d on a cohort of fewer features)")
      ("alpha", kotml::double_option(d.alpha), "triplet margin")
      ("reg", kotml::double_option(d.reg), "weight of the norm regulariser on A")
      ("reg-type", po::value<std::string>()->default_value("fro"), "regulariser norm: fro (Frobenius) or 1 (elementwise L1)")
      ("squared", po::bool_switch(), "ground cost ||A(x-y)||² instead of ||A(x-y)||")
      ("triplets", po::value<std::string>()->default_value("all"),
       "all: every in-batch triplet (i = j included); sampled: --t positives and negatives per anchor")
      ("t", po::value<int>()->default_value(d.t), "sampled triplets: draws per anchor and class");
  groups.solver.add_options()
      ("lr", kotml::double_option(d.adam.lr), "Adam learning rate")
      ("beta1", kotml::double_option(d.adam.beta1), "Adam first-moment decay")
      ("beta2", kotml::double_option(d.adam.beta2), "Adam second-moment decay")
      ("adam-eps", kotml::double_option(d.adam.eps), "Adam epsilon")
      ("epochs", po::value<std::int64_t>()->default_value(d.epochs), "epochs (passes over the training donors)")
      ("batch-size", po::value<std::int64_t>()->default_value(d.batch_size),
       "donors per stratified batch (per rank with --mode batches); ≥ donors: full batch")
      ("stop-thr", kotml::double_option(d.stop_thr),
       "stop after an epoch in which the objective gradient norm fell below this (0: never)")
      ("entropic-reg", kotml::double_option(d.ot.entropic_reg),
       "0: exact EMD; > 0: Sinkhorn with epsilon = this × the batch's mean cost")
      ("sinkhorn-max-iter", po::value<int>()->default_value(d.ot.sinkhorn_max_iter), "Sinkhorn iterations at most")
      ("sinkhorn-tol", kotml::double_option(d.ot.sinkhorn_tol), "Sinkhorn marginal-error tolerance")
      ("sinkhorn-domain", po::value<std::string>()->default_value("auto"),
       "Sinkhorn formulation: auto (scaling domain where exp(-C/epsilon) is representable, else log), log or scaling")
      ("sinkhorn-double", po::bool_switch(),
       "Sinkhorn on double-precision projected points (default: single precision, as GGML-OT's float32)")
      ("emd-max-iter", po::value<std::int64_t>()->default_value(d.ot.emd_max_iter), "network-simplex pivots at most per pair")
      ("emd-max-entries", po::value<std::int64_t>()->default_value(d.ot.emd_max_entries),
       "largest donor pair n x m exact EMD takes on; larger pairs need Sinkhorn (--entropic-reg)")
      ("lr-scaling", po::value<std::string>()->default_value("linear"),
       "mode batches: learning rate × ranks (linear), × sqrt(ranks) (sqrt) or unchanged (none)")
      ("no-warm-start", po::bool_switch(), "solve every EMD from scratch instead of from the pair's previous basis");
  groups.parallel.add_options()
      ("mode", po::value<std::string>()->default_value("pairs"),
       "pairs: split each batch's OT pairs over ranks; batches: one batch per rank, gradients averaged")
      ("cost-memory", po::value<std::int64_t>()->default_value(static_cast<std::int64_t>(d.ot.workspace_bytes)),
       "bytes per rank for the stored costs of the donor pairs solved together; a Sinkhorn pair larger on its own "
       "is solved by the tiled engine, its costs stored within this budget or recomputed tile by tile");
  groups.output.add_options()
      ("checkpoint-every", po::value<std::int64_t>()->default_value(0), "write a checkpoint every N epochs (0: never)")
      ("checkpoint", po::value<std::string>()->default_value(""), "checkpoint file (default: OUT_DIR/checkpoint.h5)")
      ("restart", po::bool_switch(), "continue from the checkpoint file");
}

/// Reads the options declared above (seed from the cohort options' --seed).
inline TrainOptions train_options_from(const boost::program_options::variables_map& vm) {
  TrainOptions o;
  o.n_comps = vm["n-comps"].as<std::int64_t>();
  o.n_comps_defaulted = vm["n-comps"].defaulted();
  o.alpha = vm["alpha"].as<double>();
  o.reg = vm["reg"].as<double>();
  o.reg_type = parse_reg_norm(vm["reg-type"].as<std::string>());
  o.adam.lr = vm["lr"].as<double>();
  o.adam.beta1 = vm["beta1"].as<double>();
  o.adam.beta2 = vm["beta2"].as<double>();
  o.adam.eps = vm["adam-eps"].as<double>();
  o.epochs = vm["epochs"].as<std::int64_t>();
  o.batch_size = vm["batch-size"].as<std::int64_t>();
  o.stop_thr = vm["stop-thr"].as<double>();
  o.squared = vm["squared"].as<bool>();
  o.ot.entropic_reg = vm["entropic-reg"].as<double>();
  o.ot.sinkhorn_max_iter = vm["sinkhorn-max-iter"].as<int>();
  o.ot.sinkhorn_tol = vm["sinkhorn-tol"].as<double>();
  o.ot.emd_max_iter = vm["emd-max-iter"].as<std::int64_t>();
  o.ot.emd_max_entries = vm["emd-max-entries"].as<std::int64_t>();
  o.ot.sinkhorn_float = !vm["sinkhorn-double"].as<bool>();
  o.ot.sinkhorn_domain = ot::parse_sinkhorn_domain(vm["sinkhorn-domain"].as<std::string>());
  o.ot.workspace_bytes = stage::OtSettings::cost_memory(vm["cost-memory"].as<std::int64_t>());
  o.triplets = parse_triplet_mode(vm["triplets"].as<std::string>());
  o.t = vm["t"].as<int>();
  o.mode = parse_distribution_mode(vm["mode"].as<std::string>());
  o.lr_scaling = parse_lr_scaling(vm["lr-scaling"].as<std::string>());
  o.warm_start = !vm["no-warm-start"].as<bool>();
  o.seed = vm["seed"].as<std::uint64_t>();
  o.checkpoint_every = vm["checkpoint-every"].as<std::int64_t>();
  o.checkpoint_path = vm["checkpoint"].as<std::string>();
  // Checks that need no cohort, so that bad values fail before any data is read.
  o.adam.validate();
  o.ot.validate();
  if (o.n_comps < 1) throw Error::option("n-comps", "must be at least 1, got " + std::to_string(o.n_comps));
  return o;
}

}  // namespace kotml::learn
