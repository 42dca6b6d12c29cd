#pragma once
// pairOT's differential-expression tables of one data set: what
// rank_genes_limma (cellannotation/pairOT a66c7cf, src/pairot/pp/_testing.py)
// stores as uns["de_res_ova"] and uns["de_res_ava"].
//
// Contents. For every tested cluster c (one with a pseudobulk group) an OVA
// table, and for every ordered pair (a, b) of tested clusters an AVA table,
// each with one entry per gene (the counts' column order):
//   logFC, P.Value, adj.P.Val   limma on the pseudobulk (kotml/map/limma.hpp);
//                               AVA (b, a) is (a, b) with logFC negated, as
//                               pairOT builds it;
//   auroc                       single-cell AUROC (kotml/map/auroc.hpp) as the
//                               float32 pairOT stores: float(U / n₁n₂), and for
//                               the second of two clusters (names in sorted
//                               order: every AVA pair, and OVA with exactly two
//                               clusters) float(1 − float(first)), as calc_auroc
//                               computes it. pandas then compares it in float32
//                               (auroc ≥ 0.6 means float(auroc) ≥ float(0.6)).
// pairOT's later steps (pp/_selection.py, tl/_label_distance.py) read logFC,
// adj.P.Val and auroc, indexed by gene name, and sort by logFC; its tables'
// rows come in topTable's order (by the B statistic), which matters only for
// genes with equal logFC. Here tables are indexed by gene.
//
// Clusters with cells but no pseudobulk group are skipped: no tables, and their
// cells are left out of the AUROC too, so every table equals pairOT's on the
// data without them (pairOT itself stops on such clusters). The caller warns.
//
// Distribution. Each rank holds a contiguous block of cells (rows of the
// counts) and every cell's labels. One exchange (data::transpose_to_column_blocks)
// gives each rank a contiguous block of genes over every cell; it sums its
// genes' pseudobulk groups (each sum adding its cells in cell order) and
// computes their AUROC (the expensive part). The group sums are gathered, and
// limma runs on every rank on the gathered pseudobulk (cheap); the AUROC blocks
// are gathered in gene order. Every rank ends with the same tables,
// bit-identical for any rank count, since each gene's numbers are computed the
// same way wherever it lands. Memory per rank: its cells, plus its genes over
// every cell, plus the groups × genes sums.

#include <cstdint>
#include <string>
#include <vector>

#include "kotml/data/sparse.hpp"
#include "kotml/dist/comm.hpp"
#include "kotml/map/pseudobulk.hpp"

namespace kotml::map {

struct DeOptions {
  /// Cells per cluster for the AUROC; ≤ 0: all (pairOT's None).
  std::int64_t n_samples_auroc = 10000;
  /// Seed of the downsampling streams.
  std::uint64_t seed = 0;
};

/// One OVA or AVA table, indexed by gene.
struct DeTable {
  std::vector<double> logfc, p_value, adj_p_value;
  std::vector<float> auroc;
  bool empty() const { return logfc.empty(); }
};

/// limma's eBayes prior of one fit.
struct DePrior {
  double s2_prior = 0, df_prior = 0, df_total = 0;
};

/// Wall-clock seconds of the parts (on this rank).
struct DeSeconds {
  double pseudobulk = 0, limma = 0, auroc = 0, gather = 0;
};

struct DeTables {
  std::int64_t n_genes = 0;
  std::vector<std::string> cluster_names;      // by cluster code
  std::vector<std::int32_t> clusters;          // codes with tables, ascending
  std::vector<std::int32_t> skipped_clusters;  // codes with cells but no group, ascending
  std::vector<DeTable> ova;                    // by code; empty for clusters without tables
  std::vector<DeTable> ava;                    // [a · n_codes + b]: a vs b
  std::vector<DePrior> ova_prior;              // by code
  DePrior ava_prior;
  std::vector<std::string> warnings;           // limma's (zero variances)
  DeSeconds seconds;

  const DeTable& one_vs_all(std::int32_t cluster) const;
  const DeTable& all_vs_all(std::int32_t cluster, std::int32_t other) const;
};

/// The tables from raw counts (cells × genes) and per-cell sample and cluster
/// labels, in this process alone. Error: bad counts or labels (check_de_input),
/// fewer than 2 clusters with a pseudobulk group, no residual degrees of freedom.
DeTables de_tables(const data::HostCsr& counts, const Labels& samples, const Labels& clusters,
                   const DeOptions& options = {});

/// The same with the cells spread over comm's ranks: `counts` holds cells
/// [row_begin, row_begin + counts.rows), the ranks' blocks contiguous in rank
/// order; samples and clusters label every cell, the same on every rank.
/// Collective; every rank receives the same tables. Failures are agreed on
/// (CollectiveError on every rank).
DeTables de_tables(const dist::Comm& comm, const data::HostCsr& counts, std::int64_t row_begin,
                   const Labels& samples, const Labels& clusters, const DeOptions& options = {});

}  // namespace kotml::map
