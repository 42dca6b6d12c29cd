#pragma once
// Where sampled GW gets its intra-cloud distances: for the M anchor nodes drawn
// in an iteration, the distance from every row a rank needs to every anchor.
// The three modes of TorchGW (torchgw/_distances.py):
//   precomputed: a full n×n matrix (from all-pairs Dijkstra on the kNN graph, or
//                given), held as row blocks: each rank keeps only its plan rows;
//   dijkstra:    single-source Dijkstra from each anchor not seen recently, rows
//                kept in a bounded first-in-first-out cache;
//   landmark:    farthest-point landmarks L, and the Euclidean distance between
//                rows of the (n × L) landmark-distance embedding as the proxy.
// Distances are float32 (as TorchGW's providers return them), +inf allowed.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kotml/core/types.hpp"
#include "kotml/dist/comm.hpp"
#include "kotml/graph/csr_graph.hpp"
#include "kotml/io/hdf5.hpp"

namespace kotml::gw {

using graph::NodeId;
using DistanceBlock = Kokkos::View<float**, Kokkos::LayoutRight, MemSpace>;

class DistanceProvider {
 public:
  virtual ~DistanceProvider() = default;
  /// Number of points of this cloud.
  virtual std::int64_t size() const = 0;
  /// Collective (every rank calls it with the same anchors). Fills
  /// block(i, m) = d(first_row + i, anchors[m]) for i < block.extent(0), the
  /// rank's own plan rows, plan_rows(size()): the cost estimate gathers what it
  /// needs whole after its per-entry work on these rows.
  virtual void distances(const std::vector<NodeId>& anchors, std::int64_t first_row,
                         DistanceBlock block) = 0;
  /// Rows computed by Dijkstra so far (all ranks together; diagnostics).
  virtual std::int64_t dijkstra_runs() const { return 0; }
};

/// precomputed, from a graph: each rank runs Dijkstra from its own plan rows.
/// Collective.
std::unique_ptr<DistanceProvider> precomputed_from_graph(const graph::CsrGraph<MemSpace>& g,
                                                         const dist::Comm& comm);
/// precomputed, from an n×n dataset of a file: each rank reads its own row
/// block. Collective. Errors (agreed on every rank) for a matrix that is not
/// square or not n×n, a negative entry, or a NaN ("missing distance").
std::unique_ptr<DistanceProvider> precomputed_from_file(const std::string& path,
                                                        const std::string& dataset,
                                                        const dist::Comm& comm);
/// precomputed, from a full host matrix (n×n row-major) that every rank holds;
/// each rank keeps its own rows. Validated as the file variant.
std::unique_ptr<DistanceProvider> precomputed_from_matrix(std::int64_t n,
                                                          const std::vector<float>& values,
                                                          const std::string& source,
                                                          const dist::Comm& comm);
/// dijkstra: at most max(cache_rows, anchors per call) rows kept, the oldest
/// not needed by the current call evicted first (TorchGW's policy). New rows
/// are split over the ranks and shared.
std::unique_ptr<DistanceProvider> dijkstra_provider(const graph::CsrGraph<MemSpace>& g,
                                                    std::int64_t cache_rows,
                                                    const dist::Comm& comm);
/// The two clouds' providers.
struct DistanceProviders {
  std::unique_ptr<DistanceProvider> source, target;
};
/// landmark: in each cloud, min(landmarks, n) farthest-point landmarks from
/// node 0 and the n × L embedding of every node's distances to them. The
/// landmarks are found one after another (each is the node farthest from
/// those before), so one rank builds each cloud's embedding and broadcasts
/// it: rank 0 the source's and rank P/2 the target's, at once from two ranks
/// on. Every rank then holds both, and the distances need no communication.
/// The embeddings' bits do not depend on the rank that builds them. Where the
/// ranks span the world, a simulated run with folding keeps one copy of each
/// for all ranks. Collective.
DistanceProviders landmark_providers(const graph::CsrGraph<MemSpace>& source,
                                     const graph::CsrGraph<MemSpace>& target, std::int64_t landmarks,
                                     const dist::Comm& comm);

}  // namespace kotml::gw
