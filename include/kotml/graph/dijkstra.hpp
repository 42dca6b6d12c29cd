#pragma once
// Single-source shortest paths on a CsrGraph with non-negative lengths, written
// as device-callable code over caller-provided workspace, so that many sources
// run at once: one source per team, its workspace in that team's scratch.
//
// Lengths are summed in double along the path, as scipy.sparse.csgraph.dijkstra
// does, and unreachable nodes get +inf, as there. The result does not depend on
// the order in which equal-distance nodes are settled: dist(v) is the minimum of
// dist(u) + w(u, v) over the same candidate set either way.

#include <Kokkos_Core.hpp>

#include "kotml/core/math.hpp"
#include "kotml/core/prefetch.hpp"
#include "kotml/core/types.hpp"
#include "kotml/graph/csr_graph.hpp"
#include "kotml/graph/node_order.hpp"

namespace kotml::graph {

/// An indexed 8-ary min-heap of (distance, node) with decrease-key, over three
/// arrays of n entries each that the caller owns (scratch memory). pos[v] is
/// v's slot in the heap, `unseen` before v is reached and `settled` after it is
/// popped. Eight children share a cache line of keys, so a pop touches about a
/// third of the levels of a binary heap; equal keys are not ordered further
/// (the distances do not depend on it, and the extra comparison cost a third
/// of the run time on kNN graphs).
class DijkstraHeap {
 public:
  static constexpr NodeId unseen = -1;
  static constexpr NodeId settled = -2;
  static constexpr NodeId arity = 8;

  KOKKOS_INLINE_FUNCTION DijkstraHeap(double* key, NodeId* node, NodeId* pos)
      : key_(key), node_(node), pos_(pos) {}

  KOKKOS_INLINE_FUNCTION bool empty() const { return size_ == 0; }
  KOKKOS_INLINE_FUNCTION NodeId position(NodeId v) const { return pos_[v]; }
  /// A node with the smallest key; the heap must not be empty.
  KOKKOS_INLINE_FUNCTION NodeId top() const { return node_[0]; }

  /// Inserts v, or lowers its key if it is already in the heap.
  KOKKOS_INLINE_FUNCTION void push_or_decrease(NodeId v, double d) {
    NodeId slot = pos_[v];
    if (slot == unseen) slot = size_++;
    while (slot > 0) {
      const NodeId parent = (slot - 1) / arity;
      if (!(d < key_[parent])) break;
      place(slot, node_[parent], key_[parent]);
      slot = parent;
    }
    place(slot, v, d);
  }

  /// Removes and returns a node with the smallest key, marking it settled.
  KOKKOS_INLINE_FUNCTION NodeId pop(double& d) {
    const NodeId top = node_[0];
    d = key_[0];
    pos_[top] = settled;
    --size_;
    if (size_ == 0) return top;
    // Move the last entry down from the root.
    const NodeId v = node_[size_];
    const double k = key_[size_];
    NodeId slot = 0;
    while (true) {
      const NodeId first = arity * slot + 1;
      if (first >= size_) break;
      const NodeId last = first + arity < size_ ? first + arity : size_;
      NodeId best = first;
      double best_key = key_[first];
      for (NodeId c = first + 1; c < last; ++c)
        if (key_[c] < best_key) {
          best_key = key_[c];
          best = c;
        }
      if (!(best_key < k)) break;
      place(slot, node_[best], best_key);
      slot = best;
    }
    place(slot, v, k);
    return top;
  }

 private:
  KOKKOS_INLINE_FUNCTION void place(NodeId slot, NodeId v, double d) {
    key_[slot] = d;
    node_[slot] = v;
    pos_[v] = slot;
  }

  double* key_;
  NodeId* node_;
  NodeId* pos_;
  NodeId size_ = 0;
};

/// Shortest-path lengths from `source` to every node into dist[0..n).
/// Workspace: heap_key (n doubles), heap_node and pos (n NodeIds each).
template <class Offsets, class Neighbors, class Weights>
KOKKOS_INLINE_FUNCTION void dijkstra_from(const Offsets& offsets, const Neighbors& neighbors,
                                          const Weights& weights, NodeId n, NodeId source,
                                          double* dist, double* heap_key, NodeId* heap_node,
                                          NodeId* pos) {
  for (NodeId v = 0; v < n; ++v) {
    dist[v] = kmath::infinity<double>();
    pos[v] = DijkstraHeap::unseen;
  }
  DijkstraHeap heap(heap_key, heap_node, pos);
  dist[source] = 0.0;
  heap.push_or_decrease(source, 0.0);
  while (!heap.empty()) {
    double du = 0.0;
    const NodeId u = heap.pop(du);
    // The heap's new top is usually the next node settled. Its row (neighbour
    // ids and lengths) is anywhere in memory once the graph outgrows the
    // caches, and was most of the misses per node (perf/RESULTS.md, "why
    // apsp's Dijkstra costs more per node"); asking for it now overlaps that
    // wait with relaxing u's edges. A node in the heap was reached over an
    // edge, stored both ways, so its row is not empty: next_row is an edge.
    if (!heap.empty()) {
      const EdgeOffset next_row = offsets(heap.top());
      prefetch_line(&neighbors(next_row));
      prefetch_line(&weights(next_row));
    }
    for (EdgeOffset e = offsets(u); e < offsets(u + 1); ++e) {
      const NodeId v = neighbors(e);
      const double candidate = du + weights(e);
      if (candidate < dist[v]) {  // settled nodes never improve: weights are ≥ 0
        dist[v] = candidate;
        heap.push_or_decrease(v, candidate);
      }
    }
  }
}

/// Bytes of scratch one source needs on an n-node graph.
std::size_t dijkstra_scratch_bytes(std::int64_t n);

/// out(r, v) = shortest-path length from sources(r) to v, for r < sources.extent(0),
/// +inf where v is unreachable. Sources run in parallel, one per team with its
/// workspace in team scratch; T is float or double (lengths are always summed
/// in double and rounded once). out must have at least as many rows as sources
/// and exactly n columns.
template <class T>
void shortest_paths(const CsrGraph<MemSpace>& g, Kokkos::View<const NodeId*, MemSpace> sources,
                    Kokkos::View<T**, Kokkos::LayoutRight, MemSpace> out);

/// The same rows on a graph in locality order: sources(r) and the columns are
/// the caller's node ids, and the lengths are the bits shortest_paths gives on
/// the graph before relabelling, found with fewer cache misses (node_order.hpp).
template <class T>
void shortest_paths(const LocalityOrderedGraph& g, Kokkos::View<const NodeId*, MemSpace> sources,
                    Kokkos::View<T**, Kokkos::LayoutRight, MemSpace> out);

extern template void shortest_paths<float>(const CsrGraph<MemSpace>&,
                                           Kokkos::View<const NodeId*, MemSpace>,
                                           Kokkos::View<float**, Kokkos::LayoutRight, MemSpace>);
extern template void shortest_paths<double>(const CsrGraph<MemSpace>&,
                                            Kokkos::View<const NodeId*, MemSpace>,
                                            Kokkos::View<double**, Kokkos::LayoutRight, MemSpace>);
extern template void shortest_paths<float>(const LocalityOrderedGraph&, Kokkos::View<const NodeId*, MemSpace>,
                                           Kokkos::View<float**, Kokkos::LayoutRight, MemSpace>);
extern template void shortest_paths<double>(const LocalityOrderedGraph&, Kokkos::View<const NodeId*, MemSpace>,
                                            Kokkos::View<double**, Kokkos::LayoutRight, MemSpace>);

}  // namespace kotml::graph
