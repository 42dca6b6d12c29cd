#pragma once
// Highly variable genes, scanpy's default flavour 'seurat' (scanpy 1.11
// pp.highly_variable_genes), on log1p data:
//  * per gene, mean and unbiased variance of expm1(x);
//  * dispersion = log(var / mean) (mean 0 -> 1e-12; dispersion 0 -> NaN),
//    mean -> log1p(mean);
//  * genes cut into n_bins equal-width bins of mean (pandas.cut: the lowest edge
//    lowered by 0.1% of the range, bins closed on the right);
//  * dispersions normalised by their bin's mean and SD (NaN-skipping, ddof 1); a
//    bin whose SD is undefined normalises by (x - 0) / mean instead;
//  * selection: the n_top_genes largest normalised dispersions (ties at the
//    cutoff all kept), or the cutoffs min/max mean and min/max dispersion;
//  * with batches: each batch on its own genes expressed in it (others get 0),
//    statistics averaged over batches, genes ranked by the number of batches that
//    selected them, then by mean normalised dispersion (ties in gene-name order).
//
// The moments are sums over cells, so the rows can be spread over ranks: each
// rank sums whole chunks of rows (the chunking depends on the input's shape
// alone) and the chunks' sums are added exactly, so every rank count gives the
// same bits.

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kotml/data/sparse.hpp"
#include "kotml/dist/comm.hpp"
#include "kotml/dist/partition.hpp"

namespace kotml::data {

struct HvgOptions {
  std::int64_t n_top_genes = 0;  // 0: select by the cutoffs below
  double min_mean = 0.0125;
  double max_mean = 3.0;
  double min_disp = 0.5;
  double max_disp = std::numeric_limits<double>::infinity();
  std::int64_t n_bins = 20;
};

struct HvgResult {
  std::vector<double> means;             // log1p of the mean of expm1(x)
  std::vector<double> dispersions;       // log dispersion (NaN possible)
  std::vector<double> dispersions_norm;  // normalised within its mean bin (NaN possible)
  std::vector<std::uint8_t> highly_variable;
  // With batches only:
  std::int64_t n_batches = 0;
  std::vector<std::int64_t> highly_variable_nbatches;
  std::vector<std::uint8_t> highly_variable_intersection;

  /// Indices of the selected genes, ascending.
  std::vector<std::int64_t> selected() const;
};

/// log_data: cells × genes, log1p-transformed. batch: per cell, in [0, n_batches);
/// empty for no batches. gene_names: for the batched ranking's tie order.
HvgResult highly_variable_genes(const HostCsr& log_data, const HvgOptions& options,
                                const std::vector<std::string>& gene_names,
                                const std::vector<std::int32_t>& batch = {}, std::int64_t n_batches = 0);

/// The rows [begin, end) of an input of `rows` rows (genes columns, n_batches
/// batches, 0 for none) whose moments `rank` of `ranks` sums: whole chunks, in
/// contiguous blocks per rank (possibly empty).
dist::Block hvg_row_block(std::int64_t rows, std::int64_t genes, std::int64_t n_batches, int ranks, int rank);

/// Distributed: `log_rows` are this rank's rows of a log1p input of `total_rows`
/// rows, hvg_row_block(total_rows, genes, n_batches, comm.size(), comm.rank()),
/// and `batch` their batches. Every rank returns the result of the one-process
/// call on all rows, bit for bit. Collective.
HvgResult highly_variable_genes(const dist::Comm& comm, const HostCsr& log_rows, std::int64_t total_rows,
                                const HvgOptions& options, const std::vector<std::string>& gene_names,
                                const std::vector<std::int32_t>& batch, std::int64_t n_batches);

}  // namespace kotml::data
