#pragma once
// Per-gene AUROC of clusters on single cells, as pairOT computes it
// (cellannotation/pairOT a66c7cf, src/pairot/pp/_auroc.pyx calc_auroc).
//
// Maths. For a gene and two disjoint cell sets P (n₁ cells) and N (n₂ cells),
// the raw counts of P ∪ N are ranked with average ranks for ties (all zeros are
// one tie, rank (n_zero + 1)/2), R₁ is the rank sum over P, and
//   AUROC = (R₁ − n₁(n₁ + 1)/2) / (n₁ n₂)   (Mann–Whitney U / n₁n₂),
// the probability that a cell of P has the larger count, ties counting ½.
// OVA: P = a cluster's cells, N = all other included cells. AVA: for a pair
// (a, b), P = a's cells, N = b's cells. An empty P or N gives 0.5, as pairOT.
// Ranks are half-integers, so R₁ and U are kept as exact integers (2U) and the
// result is the one rounded division U / (n₁ n₂): the double pairOT computes
// before storing it as float32 (de_tables does that rounding).
//
// Downsampling: pairOT keeps at most n_samples_auroc cells per cluster, drawn
// with numpy's generator (seed 0), which kotml cannot reproduce. kotml keeps
// every cell of a cluster with at most n_samples cells (then the result equals
// pairOT's exactly) and otherwise draws n_samples of the cluster's cells without
// replacement (partial Fisher–Yates over the cluster's cells in ascending order)
// from the stream (seed, Purpose::map_auroc_downsample, cluster code). The same
// cells serve OVA and every AVA pair (pairOT redraws per pair).
//
// Parallelism: one gene per unit of work, a Kokkos parallel_for over chunks of
// genes on the host execution space (each chunk's genes computed by one thread
// in gene order with its own scratch), so results do not depend on the thread
// count or on how genes are split over ranks.
//
// Layout. Input: the counts transposed, genes × cells CSR (data::transpose), or
// a block of genes of it. Output rows are genes of that input, row-major.

#include <cstdint>
#include <utility>
#include <vector>

#include "kotml/data/sparse.hpp"

namespace kotml::map {

/// Cells kept for the AUROC: 1 where kept. Cells with cluster code −1 are never
/// kept. n_samples ≤ 0 keeps every cell (pairOT's n_samples_auroc=None).
std::vector<std::uint8_t> downsample_cells(const std::vector<std::int32_t>& cluster_of_cell,
                                           std::int32_t n_clusters, std::int64_t n_samples,
                                           std::uint64_t seed);

struct AurocResult {
  std::int64_t n_genes = 0;
  std::int32_t n_clusters = 0;
  std::vector<double> ova;  // n_genes × n_clusters: cluster c against every other included cell
  std::vector<double> ava;  // n_genes × pairs.size(): pairs[k].first against pairs[k].second
};

/// AUROC of every gene (row) of by_gene, genes × cells. cluster_of_cell: each
/// cell's cluster code in [0, n_clusters), or −1 for a cell left out. Error on
/// negative or NaN values and on sizes that disagree.
AurocResult auroc(const data::HostCsr& by_gene, const std::vector<std::int32_t>& cluster_of_cell,
                  std::int32_t n_clusters,
                  const std::vector<std::pair<std::int32_t, std::int32_t>>& pairs);

}  // namespace kotml::map
