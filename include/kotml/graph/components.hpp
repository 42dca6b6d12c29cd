#pragma once
// Connected components of an undirected graph, in parallel: min-label hooking
// with pointer jumping (Shiloach–Vishkin style). Every round reads the previous
// labels and writes new ones (integer atomic min only), so the result is exact
// and the same for any thread count.

#include <cstdint>

#include "kotml/graph/csr_graph.hpp"

namespace kotml::graph {

struct Components {
  /// label(v) = the smallest node id in v's component. Node 0's component is
  /// therefore label 0, the "component 0" of scipy's connected_components.
  Kokkos::View<NodeId*, MemSpace> label;
  std::int64_t count = 0;
};

Components connected_components(const CsrGraph<MemSpace>& g);

}  // namespace kotml::graph
