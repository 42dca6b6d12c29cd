#include "kotml/graph/landmarks.hpp"

#include <limits>
#include <string>

#include "kotml/core/error.hpp"
#include "kotml/core/math.hpp"
#include "kotml/graph/dijkstra.hpp"

namespace kotml::graph {
namespace {

using Distances = Kokkos::View<double**, Kokkos::LayoutRight, MemSpace>;

/// nearest(v) = min(nearest(v), distances(row, v)).
void fold_nearest(Distances distances, std::int64_t row, Kokkos::View<double*, MemSpace> nearest) {
  Kokkos::parallel_for(
      "kotml::graph::landmark_nearest", Kokkos::RangePolicy<ExecSpace>(0, nearest.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t v) {
        nearest(v) = kmath::min(nearest(v), distances(row, v));
      });
}

/// The node farthest from all landmarks; +inf counts as -1 (never chosen),
/// ties to the smallest id. Two exact reductions instead of a MaxLoc, whose
/// tie-breaking Kokkos does not specify.
NodeId farthest_node(Kokkos::View<const double*, MemSpace> nearest) {
  const std::int64_t n = nearest.extent(0);
  double largest = -kmath::infinity<double>();
  Kokkos::parallel_reduce(
      "kotml::graph::landmark_farthest", Kokkos::RangePolicy<ExecSpace>(0, n),
      KOKKOS_LAMBDA(const std::int64_t v, double& m) {
        const double d = kmath::isinf(nearest(v)) ? -1.0 : nearest(v);
        if (d > m) m = d;
      },
      Kokkos::Max<double>(largest));
  std::int64_t first = std::numeric_limits<std::int64_t>::max();
  Kokkos::parallel_reduce(
      "kotml::graph::landmark_first_farthest", Kokkos::RangePolicy<ExecSpace>(0, n),
      KOKKOS_LAMBDA(const std::int64_t v, std::int64_t& m) {
        const double d = kmath::isinf(nearest(v)) ? -1.0 : nearest(v);
        if (d == largest && v < m) m = v;
      },
      Kokkos::Min<std::int64_t>(first));
  return static_cast<NodeId>(first);
}

}  // namespace

Landmarks farthest_point_landmarks(const CsrGraph<MemSpace>& g, std::int64_t count, NodeId start) {
  return farthest_point_landmarks(locality_ordered(g, false), count, start);
}

Landmarks farthest_point_landmarks(const LocalityOrderedGraph& ordered, std::int64_t count, NodeId start) {
  const CsrGraph<MemSpace>& g = ordered.graph;
  require(count >= 1, "", "landmarks",
          "the number of landmarks must be at least 1, got " + std::to_string(count));
  require(start >= 0 && start < g.n, "", "landmarks",
          "start node " + std::to_string(start) + " is not in the graph");
  const std::int64_t chosen = count < g.n ? count : g.n;
  Landmarks result;
  result.distances = Distances(no_init("kotml::graph::landmark_distances"), chosen, g.n);
  Kokkos::View<double*, MemSpace> nearest(no_init("kotml::graph::landmark_nearest"), g.n);
  Kokkos::deep_copy(nearest, kmath::infinity<double>());
  Kokkos::View<NodeId*, MemSpace> source("kotml::graph::landmark_source", 1);
  NodeId next = start;
  for (std::int64_t l = 0; l < chosen; ++l) {
    result.nodes.push_back(next);
    Kokkos::deep_copy(source, next);
    auto row = Kokkos::subview(result.distances, Kokkos::make_pair(l, l + 1), Kokkos::ALL());
    shortest_paths<double>(ordered, source, row);
    fold_nearest(result.distances, l, nearest);
    next = farthest_node(nearest);
  }
  return result;
}

}  // namespace kotml::graph
