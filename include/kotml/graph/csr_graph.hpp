#pragma once
// An undirected weighted graph in compressed sparse row form: both directions of
// every edge are stored, and each row's neighbours are sorted by node id with no
// repeats (scipy's canonical CSR), so two graphs with the same edges have the same
// arrays and a row can be merged or searched without sorting it first.

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kotml/core/types.hpp"

namespace kotml::graph {

/// Node ids inside kernels. All-pairs distances are O(n²), so graphs stay far
/// below 2^31 nodes; 32-bit ids halve the bytes a Dijkstra relaxation reads.
using NodeId = std::int32_t;
/// Edge offsets are 64-bit: n·k directed edges may pass 2^31 for large clouds.
using EdgeOffset = std::int64_t;

template <class Space = MemSpace>
struct CsrGraph {
  using memory_space = typename Space::memory_space;

  std::int64_t n = 0;
  Kokkos::View<EdgeOffset*, memory_space> offsets;  ///< n + 1 entries
  Kokkos::View<NodeId*, memory_space> neighbors;    ///< offsets(n) entries, sorted per row
  Kokkos::View<double*, memory_space> weights;      ///< edge lengths, ≥ 0
  /// In a simulated run with folding on, the memory of arrays that every
  /// simulated rank shares (sim::shared_copy); empty otherwise.
  std::vector<std::shared_ptr<void>> shared_memory;

  std::int64_t num_directed_edges() const {
    if (n == 0) return 0;
    EdgeOffset last = 0;
    Kokkos::deep_copy(last, Kokkos::subview(offsets, n));
    return last;
  }
};

/// A copy of the graph in another memory space (the host, say, for writing).
template <class ToSpace, class FromSpace>
CsrGraph<ToSpace> copy_graph(const CsrGraph<FromSpace>& g) {
  CsrGraph<ToSpace> out;
  out.n = g.n;
  out.offsets = Kokkos::create_mirror_view_and_copy(typename ToSpace::memory_space(), g.offsets);
  out.neighbors = Kokkos::create_mirror_view_and_copy(typename ToSpace::memory_space(), g.neighbors);
  out.weights = Kokkos::create_mirror_view_and_copy(typename ToSpace::memory_space(), g.weights);
  return out;
}

/// The canonical undirected graph on n nodes holding the given edges (each listed
/// once, in either direction; the reverse is added here). Repeated edges keep
/// their shortest length, self-loops are dropped. Deterministic: the result does
/// not depend on the order of the list or on how threads interleave.
CsrGraph<MemSpace> undirected_graph_from_edges(std::int64_t n,
                                               Kokkos::View<const NodeId*, MemSpace> from,
                                               Kokkos::View<const NodeId*, MemSpace> to,
                                               Kokkos::View<const double*, MemSpace> length);

/// Builds a graph from host arrays in scipy's CSR layout (indptr, indices, data).
/// Checks what Dijkstra relies on: offsets that start at 0 and never decrease,
/// neighbour ids in range, finite non-negative weights. Unsorted rows, duplicate
/// entries (the shortest one is kept) and one-directional entries are accepted:
/// the graph is made undirected by adding every missing reverse edge, as
/// scipy.sparse.csgraph does with directed=False. `source` names the input in errors.
CsrGraph<MemSpace> graph_from_csr(std::int64_t n, const std::vector<std::int64_t>& indptr,
                                  const std::vector<std::int64_t>& indices,
                                  const std::vector<double>& data, const std::string& source);

/// True when the graph is stored symmetrically with equal weights both ways and
/// sorted, duplicate-free rows: the invariant every builder here establishes.
bool is_canonical_undirected(const CsrGraph<MemSpace>& g);

}  // namespace kotml::graph
