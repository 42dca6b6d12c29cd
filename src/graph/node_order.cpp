#include "kotml/graph/node_order.hpp"

#include <algorithm>
#include <numeric>

#include "kotml/core/device_copy.hpp"
#include "kotml/core/error.hpp"
#include "kotml/core/region.hpp"
#include "kotml/core/simulation.hpp"

namespace kotml::graph {
namespace {

using Ids = Kokkos::View<NodeId*, MemSpace>;

/// One row of the relabelled graph: its entries renamed, then sorted by the new
/// ids (insertion sort: kNN rows hold tens of entries).
struct RelabelRows {
  Kokkos::View<const EdgeOffset*, MemSpace> old_offsets;
  Kokkos::View<const NodeId*, MemSpace> old_neighbors;
  Kokkos::View<const double*, MemSpace> old_weights;
  Kokkos::View<const NodeId*, MemSpace> old_of_new, new_of_old;
  Kokkos::View<const EdgeOffset*, MemSpace> offsets;
  Kokkos::View<NodeId*, MemSpace> neighbors;
  Kokkos::View<double*, MemSpace> weights;

  KOKKOS_FUNCTION void operator()(const std::int64_t i) const {
    const NodeId u = old_of_new(i);
    const EdgeOffset from = old_offsets(u), count = old_offsets(u + 1) - from, base = offsets(i);
    for (EdgeOffset e = 0; e < count; ++e) {
      const NodeId v = new_of_old(old_neighbors(from + e));
      const double w = old_weights(from + e);
      EdgeOffset slot = base + e;
      while (slot > base && neighbors(slot - 1) > v) {
        neighbors(slot) = neighbors(slot - 1);
        weights(slot) = weights(slot - 1);
        --slot;
      }
      neighbors(slot) = v;
      weights(slot) = w;
    }
  }
};

}  // namespace

NodeOrder cuthill_mckee_order(const CsrGraph<MemSpace>& g) {
  const ProfilingRegion region("kotml::graph::cuthill_mckee_order");
  const auto n = static_cast<NodeId>(g.n);
  const auto offsets = Kokkos::create_mirror_view_and_copy(HostSpace(), g.offsets);
  const auto neighbors = Kokkos::create_mirror_view_and_copy(HostSpace(), g.neighbors);
  const auto degree = [&](NodeId v) { return offsets(v + 1) - offsets(v); };
  const auto fewer_neighbours = [&](NodeId a, NodeId b) { return degree(a) < degree(b); };

  std::vector<NodeId> starts(static_cast<std::size_t>(n));
  std::iota(starts.begin(), starts.end(), NodeId(0));
  std::stable_sort(starts.begin(), starts.end(), fewer_neighbours);  // ties keep id order

  NodeOrder order;
  order.old_of_new.reserve(starts.size());
  std::vector<char> placed(starts.size(), 0);
  std::vector<NodeId> fresh;
  std::size_t head = 0;
  for (const NodeId start : starts) {
    if (placed[static_cast<std::size_t>(start)]) continue;
    placed[static_cast<std::size_t>(start)] = 1;
    order.old_of_new.push_back(start);
    while (head < order.old_of_new.size()) {
      const NodeId u = order.old_of_new[head++];
      fresh.clear();
      for (EdgeOffset e = offsets(u); e < offsets(u + 1); ++e) {
        const NodeId v = neighbors(e);
        if (placed[static_cast<std::size_t>(v)]) continue;
        placed[static_cast<std::size_t>(v)] = 1;
        fresh.push_back(v);
      }
      // Rows are sorted by id, so a stable sort leaves equal degrees in id order.
      std::stable_sort(fresh.begin(), fresh.end(), fewer_neighbours);
      order.old_of_new.insert(order.old_of_new.end(), fresh.begin(), fresh.end());
    }
  }
  order.new_of_old.assign(starts.size(), 0);
  for (std::size_t i = 0; i < order.old_of_new.size(); ++i)
    order.new_of_old[static_cast<std::size_t>(order.old_of_new[i])] = static_cast<NodeId>(i);
  return order;
}

namespace {

/// g with node old_of_new(i) renamed i (both maps on the device).
CsrGraph<MemSpace> relabel_on_device(const CsrGraph<MemSpace>& g, Ids old_of_new, Ids new_of_old) {
  const ProfilingRegion region("kotml::graph::relabelled");
  CsrGraph<MemSpace> out;
  out.n = g.n;
  Kokkos::View<EdgeOffset*, MemSpace> offsets("kotml::graph::relabelled_offsets", g.n + 1);
  const auto old_offsets = g.offsets;
  Kokkos::parallel_scan(
      "kotml::graph::relabelled_offsets", Kokkos::RangePolicy<ExecSpace>(0, g.n),
      KOKKOS_LAMBDA(const std::int64_t i, EdgeOffset& sum, const bool last) {
        const NodeId u = old_of_new(i);
        sum += old_offsets(u + 1) - old_offsets(u);
        if (last) offsets(i + 1) = sum;
      });
  const EdgeOffset edges = g.num_directed_edges();
  Kokkos::View<NodeId*, MemSpace> neighbors(no_init("kotml::graph::relabelled_neighbors"), edges);
  Kokkos::View<double*, MemSpace> weights(no_init("kotml::graph::relabelled_weights"), edges);
  Kokkos::parallel_for("kotml::graph::relabel_rows", Kokkos::RangePolicy<ExecSpace>(0, g.n),
                       RelabelRows{g.offsets, g.neighbors, g.weights, old_of_new, new_of_old, offsets,
                                   neighbors, weights});
  out.offsets = offsets;
  out.neighbors = neighbors;
  out.weights = weights;
  return out;
}

}  // namespace

CsrGraph<MemSpace> relabelled(const CsrGraph<MemSpace>& g, const NodeOrder& order) {
  internal_check(static_cast<std::int64_t>(order.old_of_new.size()) == g.n &&
                     static_cast<std::int64_t>(order.new_of_old.size()) == g.n,
                 "relabelled: the order is not one of this graph's nodes");
  return relabel_on_device(g, device_copy_of<Ids>(order.old_of_new, "kotml::graph::old_of_new"),
                           device_copy_of<Ids>(order.new_of_old, "kotml::graph::new_of_old"));
}

LocalityOrderedGraph locality_ordered(const CsrGraph<MemSpace>& g, bool same_everywhere) {
  const NodeOrder order = cuthill_mckee_order(g);
  const Ids new_of_old = device_copy_of<Ids>(order.new_of_old, "kotml::graph::new_of_old");
  LocalityOrderedGraph out{
      relabel_on_device(g, device_copy_of<Ids>(order.old_of_new, "kotml::graph::old_of_new"), new_of_old),
      new_of_old};
  auto& keep = out.graph.shared_memory;
  out.graph.offsets = sim::shared_copy("kotml::graph::ordered_offsets", out.graph.offsets, same_everywhere, keep);
  out.graph.neighbors = sim::shared_copy("kotml::graph::ordered_neighbors", out.graph.neighbors, same_everywhere, keep);
  out.graph.weights = sim::shared_copy("kotml::graph::ordered_weights", out.graph.weights, same_everywhere, keep);
  out.new_of_old = sim::shared_copy("kotml::graph::new_of_old", out.new_of_old, same_everywhere, keep);
  return out;
}

}  // namespace kotml::graph
