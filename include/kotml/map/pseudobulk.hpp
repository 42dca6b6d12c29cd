#pragma once
// Pseudobulk expression for pairOT's differential-expression step
// (cellannotation/pairOT a66c7cf, src/pairot/pp/_testing.py, rank_genes_limma).
//
// Maths. For every (sample s, cluster c) with at least 2 cells, the raw counts
// of its cells are summed per gene, S[g] = Σ_cells x[cell, g]; the group is
// scaled to 1e5 in total and log-transformed:
//   y[g] = log1p(S[g] · (1e5 / Σ_g' S[g'])).
// pairOT does this in float32 (its counts are float32, and numpy keeps float32
// through the sum, the division by a Python int and the product), and R reads
// the float32 values into doubles. kotml repeats the float32 arithmetic step by
// step, so that its values are pairOT's bit for bit (also for non-integer
// "counts", where the order of float32 additions matters):
//   * S[g]: a float32 sum over the group's cells in cell order (scipy's
//     ones @ X of a CSR matrix), taken gene by gene over the transposed counts
//     (each gene's cells ascending), so that the counts may be spread over ranks;
//   * the group total: scipy's CSR row sum of the nonzero S[g] in gene order,
//     np.add.reduceat, i.e. the first value plus numpy's float32 pairwise sum
//     of the others (8 interleaved accumulators, blocks of 128);
//   * scale = float32(1e5f / total), y = log1pf(float32(S · scale)), stored as
//     double (numpy's float32 log1p is the C library's log1pf on CPUs without
//     AVX-512; with it, numpy's SIMD log1p may differ in the last bit).
// A group whose counts are all zero gives zeros (pairOT drops its zero entries
// before scaling, so it never divides 0 by 0).
//
// Order. pairOT renames clusters "c_0", "c_1", … by first appearance among the
// cells, then loops over samples in order of first appearance and, inside,
// over clusters in that renamed order, skipping groups of fewer than 2 cells.
// Groups come out in that order here too (R fits the rows in that order).
//
// Clusters with cells but without any group of ≥ 2 cells cannot be tested
// (pairOT's R code never sees them and its Python side then stops with
// "DE results for … not found"). They are listed in skipped_clusters so that
// the caller can warn; everything downstream (group order, the renaming, the
// AUROC cells) is computed as if their cells were not there. Fewer than 2
// clusters with a group is an Error, as are negative, NaN or infinite counts,
// a cell without a label, and label codes out of range.
//
// Layout. values is groups × genes, row-major (double).

#include <cstdint>
#include <string>
#include <vector>

#include "kotml/data/sparse.hpp"

namespace kotml::map {

/// One label per cell: codes index names (a categorical column).
struct Labels {
  std::vector<std::int32_t> codes;
  std::vector<std::string> names;
};

struct Pseudobulk {
  std::int64_t n_groups = 0, n_genes = 0;
  std::vector<double> values;               // n_groups × n_genes, row-major
  std::vector<std::int32_t> group_sample;   // sample code of each group
  std::vector<std::int32_t> group_cluster;  // cluster code of each group
  std::vector<std::int64_t> group_cells;    // cells summed into each group
  /// By cluster code: pairOT's renaming index i of "c_i" (first appearance
  /// among the cells of tested clusters), -1 for clusters without a group.
  std::vector<std::int32_t> cluster_rank;
  std::vector<std::int32_t> tested_clusters;   // codes with ≥ 1 group, ascending
  std::vector<std::int32_t> skipped_clusters;  // codes with cells but no group, ascending
  /// By cell: its group, -1 for cells outside every group.
  std::vector<std::int64_t> group_of_cell;
};

/// Checks counts (cells × genes) and the two label sets; Error on negative,
/// NaN or infinite values, sizes that disagree, or codes outside the names.
void check_de_input(const data::HostCsr& counts, const Labels& samples, const Labels& clusters);
/// The same for rows [row_begin, row_begin + counts.rows) of a matrix whose
/// labels (one per cell of every row) are given whole; errors name global cells.
void check_de_input(const data::HostCsr& counts, std::int64_t row_begin, const Labels& samples,
                    const Labels& clusters);

/// pairOT's pseudobulk (see the header comment). Calls check_de_input.
Pseudobulk pseudobulk(const data::HostCsr& counts, const Labels& samples, const Labels& clusters);

// The pseudobulk in three steps, for counts spread over ranks (de_tables):

/// Every field but `values` (empty), from the labels alone. Error as pseudobulk.
Pseudobulk pseudobulk_groups(const Labels& samples, const Labels& clusters, std::int64_t n_genes);

/// The float32 sums S[group, gene] of the genes of `by_gene` (a block of genes
/// × every cell, each gene's cells ascending: rows of data::transpose of the
/// counts), groups × by_gene.rows, row-major. Each sum adds its cells in cell
/// order, as pseudobulk does over the whole matrix.
std::vector<float> group_sums(const data::HostCsr& by_gene, const Pseudobulk& groups);

/// Fills groups.values from the sums of every gene (n_groups × n_genes).
void scale_group_sums(Pseudobulk& groups, const std::vector<float>& sums);

}  // namespace kotml::map
