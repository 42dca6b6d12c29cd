// The tiled Sinkhorn's options (see sinkhorn_options.hpp).

#include "sinkhorn_options.hpp"

#include "double_option.hpp"
#include "kotml/core/error.hpp"
#include "options.hpp"

namespace kotml::cli {

void declare_sinkhorn_options(OptionGroups& groups, const std::string& default_precision) {
  groups.model.add_options()
      ("tau-a", kotml::double_option(1.0),
         "Sinkhorn: τ ∈ (0,1] of the source marginal, ρ/(ρ+ε); 1 holds it exactly")
      ("tau-b", kotml::double_option(1.0), "Sinkhorn: τ ∈ (0,1] of the target marginal");
  groups.solver.add_options()
      ("epsilon", kotml::double_option(0.05), "Sinkhorn: entropic regularisation ε > 0 (absolute, as in OTT)")
      ("relative-epsilon", po::bool_switch(), "Sinkhorn: ε is a fraction of the mean cost")
      ("threshold", kotml::double_option(1e-3),
         "Sinkhorn: stop when the L1 marginal error (OTT's) falls below this")
      ("inner-iterations", po::value<std::int64_t>()->default_value(10),
         "Sinkhorn: iterations between error checks (the limit rounds up to a multiple)")
      ("updates", po::value<std::string>()->default_value("alternating"),
         "Sinkhorn: alternating (g then f, OTT's default) or symmetric (both at once, averaged: one cost sweep "
         "per iteration)")
      ("epsilon-init", kotml::double_option(1.0),
         "Sinkhorn ε-scaling: start at this multiple of ε (1: off)")
      ("epsilon-decay", kotml::double_option(1.0),
         "Sinkhorn ε-scaling: ε_t = ε·max(init·decay^t, 1)")
      ("sinkhorn-domain", po::value<std::string>()->default_value("auto"),
         "Sinkhorn: auto (the scaling domain when the costs are stored, K̃ fits beside them and ε is large enough "
         "for the cost range; the log domain otherwise), log, or scaling (the same fixed point, no exp per entry)")
      ("precision", po::value<std::string>()->default_value(default_precision),
         "Sinkhorn: double, or float (points, costs and exps in float; potentials in double)");
  groups.parallel.add_options()
      ("cost-storage", po::value<std::string>()->default_value("automatic"),
         "Sinkhorn: automatic (store the costs when they fit --cost-memory), stored, or online (recompute "
         "per tile)")
      ("online", po::bool_switch(), "Sinkhorn: the same as --cost-storage online")
      ("cost-memory", po::value<std::int64_t>(),
         "Sinkhorn: bytes per rank for stored costs, or for the row strips that let recomputed costs serve "
         "an alternating iteration in one pass (default: a quarter of the rank's free memory)")
      ("column-sum-memory", po::value<std::int64_t>(),
         "Sinkhorn: bytes per rank for the limbs of one chunk of the plan's exact column sums (cluster masses, "
         "block sums, gradients); smaller chunks take more allreduces and give the same bits (default 64 MiB)");
}

ot::TiledSinkhornOptions sinkhorn_options(const po::variables_map& vm) {
  ot::TiledSinkhornOptions o;
  o.epsilon = option<double>(vm, "epsilon");
  o.relative_epsilon = vm["relative-epsilon"].as<bool>();
  o.tau_a = option<double>(vm, "tau-a");
  o.tau_b = option<double>(vm, "tau-b");
  o.threshold = option<double>(vm, "threshold");
  o.inner_iterations = static_cast<int>(in_range<std::int64_t>(vm, "inner-iterations", 1, 1000000));
  if (has(vm, "max-iter")) o.max_iterations = static_cast<int>(in_range<std::int64_t>(vm, "max-iter", 1, 2147483647));
  o.updates = ot::parse_updates(option<std::string>(vm, "updates"));
  o.epsilon_init = option<double>(vm, "epsilon-init");
  o.epsilon_decay = option<double>(vm, "epsilon-decay");
  o.storage = ot::parse_storage(option<std::string>(vm, "cost-storage"));
  o.domain = ot::parse_sinkhorn_domain(option<std::string>(vm, "sinkhorn-domain"));
  if (vm["online"].as<bool>()) {
    if (has(vm, "cost-storage") && o.storage != ot::CostStorage::online)
      throw Error::option("online", "contradicts --cost-storage " + option<std::string>(vm, "cost-storage"));
    o.storage = ot::CostStorage::online;
  }
  if (has(vm, "cost-memory")) {
    const auto bytes = option<std::int64_t>(vm, "cost-memory");
    if (bytes < 1) throw Error::option("cost-memory", "must be a positive number of bytes, got " + std::to_string(bytes));
    o.cost_memory = static_cast<std::size_t>(bytes);
  }
  if (has(vm, "column-sum-memory")) {
    const auto bytes = option<std::int64_t>(vm, "column-sum-memory");
    if (bytes < 1)
      throw Error::option("column-sum-memory", "must be a positive number of bytes, got " + std::to_string(bytes));
    o.column_chunk_bytes = static_cast<std::size_t>(bytes);
  }
  o.validate();
  return o;
}

}  // namespace kotml::cli
