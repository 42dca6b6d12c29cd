#pragma once
// Ground-metric and OT options of the evaluation subcommands (`kotml test`,
// `kotml distances`): which metric, where a learned one comes from, and the
// solver. Header-only: only the program links Boost.Program_options.

#include <boost/program_options.hpp>

#include <cstdint>
#include <string>

#include "double_option.hpp"
#include "kotml/eval/pair_ot.hpp"
#include "option_groups.hpp"

namespace kotml::eval {

inline void declare_metric_options(OptionGroups& groups) {
  namespace po = boost::program_options;
  const stage::OtSettings d;
  groups.input.add_options()
      ("model", po::value<std::string>()->default_value(""), "results.h5 of kotml train/train-test (its /A)");
  groups.model.add_options()
      ("metric", po::value<std::string>()->default_value("learned"),
       "ground metric: learned (A from --model), euclidean or cosine (raw features)")
      ("squared", po::bool_switch(), "learned metric: ||A(x-y)||² instead of ||A(x-y)||");
  groups.solver.add_options()
      ("entropic-reg", kotml::double_option(d.entropic_reg),
       "0: exact EMD; > 0: Sinkhorn with epsilon = this × each pair's mean cost")
      ("sinkhorn-max-iter", po::value<int>()->default_value(d.sinkhorn_max_iter), "Sinkhorn iterations at most")
      ("sinkhorn-tol", kotml::double_option(d.sinkhorn_tol), "Sinkhorn marginal-error tolerance")
      ("sinkhorn-domain", po::value<std::string>()->default_value("auto"),
       "Sinkhorn formulation: auto (scaling domain where exp(-C/epsilon) is representable, else log), log or scaling")
      ("sinkhorn-double", po::bool_switch(),
       "Sinkhorn on double-precision points (default: single precision, as GGML-OT's float32)")
      ("emd-max-iter", po::value<std::int64_t>()->default_value(d.emd_max_iter), "network-simplex pivots at most per pair")
      ("emd-max-entries", po::value<std::int64_t>()->default_value(d.emd_max_entries),
       "largest donor pair n x m exact EMD takes on; larger pairs need Sinkhorn (--entropic-reg)");
  groups.parallel.add_options()
      ("cost-memory", po::value<std::int64_t>()->default_value(static_cast<std::int64_t>(d.workspace_bytes)),
       "bytes per rank for the stored costs of the donor pairs solved together; a Sinkhorn pair larger on its own "
       "is solved by the tiled engine, its costs stored within this budget or recomputed tile by tile");
}

inline stage::OtSettings ot_settings_from(const boost::program_options::variables_map& vm) {
  stage::OtSettings s;
  s.entropic_reg = vm["entropic-reg"].as<double>();
  s.sinkhorn_max_iter = vm["sinkhorn-max-iter"].as<int>();
  s.sinkhorn_tol = vm["sinkhorn-tol"].as<double>();
  s.emd_max_iter = vm["emd-max-iter"].as<std::int64_t>();
  s.emd_max_entries = vm["emd-max-entries"].as<std::int64_t>();
  s.sinkhorn_float = !vm["sinkhorn-double"].as<bool>();
  s.sinkhorn_domain = ot::parse_sinkhorn_domain(vm["sinkhorn-domain"].as<std::string>());
  s.workspace_bytes = stage::OtSettings::cost_memory(vm["cost-memory"].as<std::int64_t>());
  s.validate();
  return s;
}

}  // namespace kotml::eval
