#pragma once
// Shortest paths from many sources, split over MPI ranks (contiguous blocks of
// the source list, dist::block_of) and over Kokkos teams within a rank (one
// source per team, shortest_paths), streamed into one HDF5 dataset.
//
// Each rank computes its rows a chunk at a time and writes each chunk into the
// dataset in place (rank 0 creates it contiguous and preallocated; the ranks
// write its bytes with pwrite, at once, each its own rows), so writing scales
// with the ranks as far as the file system does. Where not every rank can open
// the file (a path not shared between nodes), rank 0 writes every row instead:
// ranks work in rounds, each computes its next chunk at the same time, then
// rank 0 writes its own and receives and writes the others' in rank order. No
// rank ever holds more than chunk_rows × n values, so the matrix can be far
// larger than one node's memory; the file holds it whole. Both ways write the
// same bytes.

#include <cstdint>
#include <string>
#include <vector>

#include "kotml/dist/comm.hpp"
#include "kotml/graph/csr_graph.hpp"
#include "kotml/graph/landmarks.hpp"
#include "kotml/graph/node_order.hpp"
#include "kotml/io/hdf5.hpp"

namespace kotml::graph {

enum class Precision { float32, float64 };

/// Parses "float32"/"float64"; Error::option naming `option` otherwise.
Precision parse_precision(const std::string& text, const std::string& option);

struct ApspOptions {
  Precision precision = Precision::float32;
  /// Rows a rank computes and sends at once (bounded further so one message
  /// stays below 2^31 elements).
  std::int64_t chunk_rows = 256;
  /// Every rank writes its own rows into the file (false: rank 0 gathers and
  /// writes them all, as it does anyway where not every rank can open the file).
  bool every_rank_writes = true;
};

/// Collective. Writes the lengths from sources[r] to every node as row r of a
/// (sources × n) dataset. `file` is used on rank 0 only (other ranks may pass
/// nullptr); the other ranks reach it by its name on disk. A write failure on
/// any rank is agreed on after its last row, so no rank waits forever; every
/// rank then throws the same CollectiveError.
struct ApspWritten {
  /// How many written lengths are infinite (pairs not connected, or a length
  /// beyond the precision's range).
  std::int64_t infinite = 0;
  /// Whether every rank wrote its own rows (false: rank 0 wrote them all).
  bool every_rank_wrote = false;
};
/// Returns the same on every rank. Dijkstra runs on `g` in locality order
/// (node_order.hpp: the same lengths, fewer cache misses on large graphs);
/// sources and columns are the caller's node ids.
ApspWritten write_shortest_paths(const LocalityOrderedGraph& g, const std::vector<NodeId>& sources,
                                 const ApspOptions& options, const dist::Comm& comm, io::h5::File* file,
                                 const std::string& dataset);
/// The same on g, ordered here (timed as "node order").
ApspWritten write_shortest_paths(const CsrGraph<MemSpace>& g, const std::vector<NodeId>& sources,
                                 const ApspOptions& options, const dist::Comm& comm, io::h5::File* file,
                                 const std::string& dataset);

/// The landmarks' rows, which choosing them computed on every rank: row l is
/// the lengths from landmarks.nodes[l], written as write_shortest_paths(g,
/// landmarks.nodes, ...) writes them (the same bytes: Dijkstra's lengths are
/// doubles in both, rounded once to the precision), without running Dijkstra.
ApspWritten write_shortest_paths(const Landmarks& landmarks, const ApspOptions& options, const dist::Comm& comm,
                                 io::h5::File* file, const std::string& dataset);

/// Rows [begin, end) of the all-pairs matrix of g (sources begin..end-1), on
/// this rank's device; the building block for distributed consumers (GW's
/// precomputed distances keep their own row block only).
template <class T>
Kokkos::View<T**, Kokkos::LayoutRight, MemSpace> shortest_path_rows(const CsrGraph<MemSpace>& g,
                                                                    std::int64_t begin,
                                                                    std::int64_t end);

}  // namespace kotml::graph
