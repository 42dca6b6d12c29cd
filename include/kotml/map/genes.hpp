#pragma once
// The gene space of a query/reference pair, as pairOT 0.1's preprocess_adatas
// (pp/_preprocessing.py, pp/_utils.py) builds it from raw counts.
//
// 1. Alignment (_get_expressed_genes_intersection, min_counts = 10): a gene is
//    kept when its total count over all cells of X is strictly greater than
//    min_counts in the query AND in the reference; genes are matched by var name.
//    pairOT returns list(set_query & set_reference), whose order follows Python's
//    string hashing and so changes from run to run (PYTHONHASHSEED); kotml keeps
//    the query's var order. Nothing downstream depends on the order (per-cell
//    ranks, cosines and DE statistics are per gene; scanpy's batched HVG ranking
//    breaks ties by gene name).
// 2. Shared highly variable genes (_get_shared_highly_variable_genes): each
//    dataset on its own is subsampled to n_samples cells when it has more
//    (pairOT: scanpy's subsample, numpy seed 0 — not reproducible here; kotml draws
//    its own sample, see hvg_sample_rows), the two are concatenated (query rows,
//    then reference rows), normalize_total(target_sum = 1e4), log1p, and scanpy's
//    'seurat' highly_variable_genes with batch_key = the dataset (query 0,
//    reference 1) and n_top_genes (pairOT's default 500) picks the genes. Only the
//    selection is used: the features stay raw counts.
//
// Data layout: count matrices are cells × genes CSR (data::HostCsr); gene sets are
// index lists into a name list.

#include <cstdint>
#include <string>
#include <vector>

#include "kotml/data/hvg.hpp"
#include "kotml/data/sparse.hpp"
#include "kotml/dist/comm.hpp"

namespace kotml::map {

/// Per-gene (column) totals of a cells × genes count matrix, summed exactly
/// and rounded once to double (pairOT sums the float32 matrix, which gives the
/// same comparison with min_counts for any realistic count data).
std::vector<double> gene_totals(const data::HostCsr& counts);
/// The same over the cells of every rank, `rows` being this rank's: the same
/// bits for any split. Collective.
std::vector<double> gene_totals(const dist::Comm& comm, const data::HostCsr& rows);

struct GeneAlignment {
  std::vector<std::string> names;            // the aligned genes, in the query's var order
  std::vector<std::int64_t> query_index;     // their columns in the query
  std::vector<std::int64_t> reference_index; // their columns in the reference
};

/// Genes with total > min_counts in both datasets, matched by name. Error (file =
/// the dataset's label, element "var_names") on a duplicated gene name.
GeneAlignment align_genes(const std::vector<std::string>& query_names, const std::vector<double>& query_totals,
                          const std::vector<std::string>& reference_names,
                          const std::vector<double>& reference_totals, double min_counts = 10.0,
                          const std::string& query_label = "query", const std::string& reference_label = "reference");

struct SharedHvgOptions {
  std::int64_t n_top_genes = 500;   // pairOT's default (its README recommends 750)
  std::int64_t n_samples = 100000;  // per dataset; <= 0: every cell
  double target_sum = 1e4;
  std::uint64_t seed = 0;
};

/// Rows of one dataset (dataset 0 = query, 1 = reference) that enter the HVG
/// selection, ascending: every row when n_obs <= n_samples, otherwise n_samples
/// rows drawn without replacement (partial Fisher–Yates on the stream
/// (seed, Purpose::subsample, 2^63 + dataset)).
std::vector<std::int64_t> hvg_sample_rows(std::int64_t n_obs, const SharedHvgOptions& options, int dataset);

/// One rank's share of the HVG sample: the stacked sample (the query's sampled
/// rows, then the reference's) cut where data::hvg_row_block puts it.
struct HvgSampleShare {
  std::vector<std::int64_t> query_rows;      // ascending, rows of the query
  std::vector<std::int64_t> reference_rows;  // ascending, rows of the reference
  std::int64_t total = 0;                    // rows of the whole stacked sample
};

/// Rank `rank` of `ranks`'s share, for files of query_cells and
/// reference_cells cells and `genes` aligned genes.
HvgSampleShare hvg_sample_share(std::int64_t query_cells, std::int64_t reference_cells, std::int64_t genes,
                                const SharedHvgOptions& options, int ranks, int rank);

/// The shared HVGs, from this rank's share of the sample: `rows` holds its
/// query rows then its reference rows (raw counts over the aligned genes,
/// gene_names naming the columns). Each side is sampled by hvg_sample_rows,
/// the rows normalised and their moments summed where data::hvg_row_block puts
/// them, the same bits on any rank count. result.selected() lists the chosen
/// genes, ascending (the aligned order). Error when n_top_genes < 1 or the
/// columns differ. Collective.
data::HvgResult shared_highly_variable_genes(const dist::Comm& comm, const HvgSampleShare& share,
                                             data::HostCsr rows, const std::vector<std::string>& gene_names,
                                             const SharedHvgOptions& options);
/// The same from two matrices that every rank holds whole.
data::HvgResult shared_highly_variable_genes(const dist::Comm& comm, const data::HostCsr& query_counts,
                                             const data::HostCsr& reference_counts,
                                             const std::vector<std::string>& gene_names,
                                             const SharedHvgOptions& options);

}  // namespace kotml::map
