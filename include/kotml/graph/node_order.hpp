#pragma once
// A relabelling of a graph's nodes that puts neighbours near each other in
// memory, for the many Dijkstra runs of apsp, gw's geodesic rows and the
// farthest-point landmarks.
//
// Dijkstra on a kNN graph reads dist, pos and the CSR row of each node it
// relaxes or settles; in the input's order (cells as a file lists them, points
// as generated) those nodes are anywhere in n, so past about 5000 nodes (some
// 200 bytes a node: the row, its lengths and the workspace) each relaxation
// misses the cache. In Cuthill–McKee order a node's neighbours were placed in
// the same breadth-first step as each other and right after their parent, so
// the nodes a Dijkstra front touches lie in a few runs of memory.
//
// The order: each connected component from its node of smallest degree (ties:
// smallest id), then breadth first, the unplaced neighbours of each node in
// order of degree (ties: id). It is a function of the graph alone, the same on
// every rank and run. Shortest-path lengths do not depend on node labels: each
// is the same minimum of the same double sums over the same edges, so the
// rows are the same bits in either order (tested).

#include <vector>

#include "kotml/core/types.hpp"
#include "kotml/graph/csr_graph.hpp"

namespace kotml::graph {

/// old_of_new[i] is the caller's id of new node i; new_of_old its inverse.
struct NodeOrder {
  std::vector<NodeId> old_of_new;
  std::vector<NodeId> new_of_old;
};

/// The Cuthill–McKee order of g (header comment), computed on the host.
NodeOrder cuthill_mckee_order(const CsrGraph<MemSpace>& g);

/// g with node old_of_new[i] renamed i: the same edges and lengths, rows
/// sorted by the new ids (a canonical undirected graph stays canonical).
CsrGraph<MemSpace> relabelled(const CsrGraph<MemSpace>& g, const NodeOrder& order);

/// A graph in locality order, and where each of the caller's nodes went.
/// Shortest paths on it take sources and give columns in the caller's ids
/// (shortest_paths in dijkstra.hpp).
struct LocalityOrderedGraph {
  CsrGraph<MemSpace> graph;
  Kokkos::View<NodeId*, MemSpace> new_of_old;  ///< its memory kept by graph.shared_memory when folded
};

/// Between two MPI calls (no MPI inside). With `same_everywhere` (g is the same
/// on every process of the run), a simulated run with folding keeps one copy
/// for all ranks (sim::shared_copy), as it does g itself.
LocalityOrderedGraph locality_ordered(const CsrGraph<MemSpace>& g, bool same_everywhere);

}  // namespace kotml::graph
