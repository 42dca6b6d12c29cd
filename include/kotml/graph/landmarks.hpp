#pragma once
// Farthest-point landmarks on a graph, as TorchGW's _landmark_embed chooses them:
// start at a given node (0 by default); each next landmark is the node whose
// shortest-path distance to the nearest landmark so far is largest. Unreachable
// nodes are never chosen (TorchGW maps their +inf to -1 before the argmax);
// ties go to the smallest node id (numpy's argmax). Each step is one Dijkstra,
// so choosing L landmarks costs exactly L single-source runs.

#include <cstdint>
#include <vector>

#include "kotml/graph/csr_graph.hpp"
#include "kotml/graph/node_order.hpp"

namespace kotml::graph {

struct Landmarks {
  std::vector<NodeId> nodes;  ///< in the order chosen
  /// distances(l, v): shortest-path length from landmark l to node v.
  Kokkos::View<double**, Kokkos::LayoutRight, MemSpace> distances;
};

/// Chooses min(count, n) landmarks. Throws Error if count < 1 or start is not a node.
/// Node ids (start, the choices, the columns) are the caller's; each Dijkstra
/// runs on `g` in locality order, which a caller running more Dijkstra on the
/// same graph (apsp) orders once and passes.
Landmarks farthest_point_landmarks(const LocalityOrderedGraph& g, std::int64_t count, NodeId start = 0);
/// The same on g, ordered here.
Landmarks farthest_point_landmarks(const CsrGraph<MemSpace>& g, std::int64_t count, NodeId start = 0);

}  // namespace kotml::graph
