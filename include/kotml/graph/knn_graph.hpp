#pragma once
// The k-nearest-neighbour graph of a point cloud, built exactly as TorchGW's
// build_knn_graph (torchgw/_graph.py) builds it, so that graph geodesics agree
// with the reference:
//   1. every point's k nearest other points by Euclidean distance (exact search);
//   2. the union of the directed edges (i→j or j→i makes {i,j} an edge), each
//      weighted by the Euclidean distance;
//   3. while the graph is disconnected: the single closest pair between the
//      component of node 0 and all other nodes is joined by an edge of its
//      Euclidean length, and the components are recomputed.
// Ties are broken by node id (smaller first) wherever the reference leaves the
// choice to a tree search, so the graph is a function of the points alone.

#include <cstdint>

#include "kotml/core/types.hpp"
#include "kotml/dist/comm.hpp"
#include "kotml/graph/csr_graph.hpp"

namespace kotml::graph {

/// The k nearest other points of each point: indices(i, t) and distances(i, t)
/// for t < k, ordered by distance, then index. Brute force, one query per
/// thread: exact in any dimension.
struct NearestNeighbors {
  Kokkos::View<NodeId**, Kokkos::LayoutRight, MemSpace> indices;
  Kokkos::View<double**, Kokkos::LayoutRight, MemSpace> distances;
};
NearestNeighbors k_nearest_neighbors(Matrix<const double> points, int k);
/// The same for query rows [begin, end) only (rows of the result are local).
NearestNeighbors k_nearest_neighbors(Matrix<const double> points, int k, std::int64_t begin,
                                     std::int64_t end);

struct KnnGraphReport {
  std::int64_t components_before_bridging = 0;  ///< of the symmetrised kNN graph
  std::int64_t bridges_added = 0;               ///< = components_before_bridging - 1
  double longest_bridge = 0.0;                  ///< 0 when none was needed
};

/// Builds the connected kNN graph of `points` (n × d, row per point).
/// Throws kotml::Error (naming `source`) for an empty cloud, k < 1, k ≥ n, or a
/// coordinate that is not finite.
CsrGraph<MemSpace> build_knn_graph(Matrix<const double> points, int k,
                                   const std::string& source = "",
                                   KnnGraphReport* report = nullptr);

/// Collective: the same graph, with the O(n²·d) neighbour search split by query
/// rows over the ranks and gathered; every rank returns the whole graph. The
/// result is identical to the one-rank call (each row's search is independent).
/// Input errors are agreed on (dist::CollectiveError on every rank).
CsrGraph<MemSpace> build_knn_graph(Matrix<const double> points, int k, const dist::Comm& comm,
                                   const std::string& source = "",
                                   KnnGraphReport* report = nullptr);

/// The Euclidean distance between rows a and b, summed in dimension order, so
/// that d(a, b) and d(b, a) have the same bits.
KOKKOS_INLINE_FUNCTION double squared_distance(const Matrix<const double>& x, std::int64_t a,
                                               std::int64_t b) {
  double s = 0.0;
  for (std::size_t c = 0; c < x.extent(1); ++c) {
    const double diff = x(a, c) - x(b, c);
    s += diff * diff;
  }
  return s;
}

}  // namespace kotml::graph
