#pragma once
// Marker genes per cluster from differential-expression tables, as pairOT 0.1's
// pp/_selection.py (filter_genes_ova, filter_genes_ava, select_genes).
//
// Input: DeResults, one GeneTable per cluster (one-vs-all, "OVA") and per ordered
// pair of clusters (all-vs-all, "AVA": x vs y, logFC > 0 when higher in x). A
// table lists tested genes as indices into one gene list shared by the query and
// the reference (the aligned genes), with limma's logFC and BH-adjusted p-value
// and the AUROC of the same comparison; rows in any order (pairOT: topTable's).
// Clusters are numbered 0..n_clusters-1 (category order).
//
// Filtering (thresholds inclusive, NaN fails): sort by logFC descending, keep
//   logFC >= 1.0, adj.P.Val <= 0.05, AUROC >= 0.6.
// Ties in logFC keep the table's order (pandas' sort is not stable beyond 16
// rows, so pairOT's order among exactly equal logFCs is unspecified).
// gene_filtering (pairOT's default True in filter_genes_* and DatasetMap.init_geom):
// keep genes in pr.pp.OFFICIAL_GENES (HGNC symbols) and not in pr.pp.FILTERED_GENES
// (mitochondrial, ribosomal, lncRNA, TCR, BCR). In pairOT a66c7cf those lists load
// from pp/resources/ correctly, so this filtering is ON by default (only
// preprocess_adatas(filter_genes=True) reads a wrong path, de_testing/resources/,
// and raises FileNotFoundError; its default is False). kotml cannot ship the lists;
// the caller passes `allowed` built by informative_genes from the two CSV files
// (empty = no filtering, pairOT's gene_filtering=False). Note that with filtering
// on, genes without HGNC symbols (e.g. Ensembl ids, simulated names) are never
// markers.
//
// Selection for cluster x (select_genes):
//   S_c = the first overlap_n_genes (10) genes of c's filtered OVA table;
//   J(x, y) = |S_x ∩ S_y| / |S_x ∪ S_y| · |S_y| / |S_x|  (0 when S_x is empty);
//   x is refined against every y != x with J(x, y) >= overlap_threshold (0.3);
//   list = first n_genes_ova of x's OVA table, then the first n_genes_ava of each
//   AVA table (x vs y) refined against (y ascending), stably sorted by logFC
//   descending, duplicate genes removed keeping the first, cut to n_genes_max.
//   pairOT uses 10/3 for the query and None/None (everything) for the reference.

#include <cstdint>
#include <string>
#include <vector>

namespace kotml::map {

struct GeneTable {
  std::vector<std::int64_t> gene;  // index into the shared gene list
  std::vector<double> log_fc;
  std::vector<double> adj_p_value;
  std::vector<double> auroc;
  std::size_t size() const { return gene.size(); }
};

struct DeResults {
  std::int64_t n_clusters = 0;
  std::vector<GeneTable> ova;  // [x]: x vs the rest
  std::vector<GeneTable> ava;  // [x * n_clusters + y], x != y: x vs y; diagonal entries unused

  explicit DeResults(std::int64_t clusters = 0)
      : n_clusters(clusters), ova(static_cast<std::size_t>(clusters)),
        ava(static_cast<std::size_t>(clusters * clusters)) {}
  GeneTable& pair(std::int64_t x, std::int64_t y) { return ava[static_cast<std::size_t>(x * n_clusters + y)]; }
  const GeneTable& pair(std::int64_t x, std::int64_t y) const {
    return ava[static_cast<std::size_t>(x * n_clusters + y)];
  }
};

struct MarkerThresholds {
  double log_fc = 1.0;
  double auroc = 0.6;
  double adj_p_value = 0.05;
};

/// Sorted (logFC descending, stable) and filtered copy of a table. allowed: per
/// gene index, nonzero = may be a marker; empty = every gene.
GeneTable filter_table(const GeneTable& table, const MarkerThresholds& thresholds = {},
                     const std::vector<std::uint8_t>& allowed = {});

/// filter_table on every OVA and AVA table (pairOT's filter_genes_ova and _ava).
DeResults filter_de_results(const DeResults& de, const MarkerThresholds& thresholds = {},
                            const std::vector<std::uint8_t>& allowed = {});

/// The feature_name column of a gene-list CSV (pairOT's pp/resources/
/// official-genes.csv or filtered-genes.csv: a header row, comma-separated).
/// Error naming the file when it cannot be read or has no feature_name column.
std::vector<std::string> read_gene_list(const std::string& csv_path);

/// Per gene: 1 when it is in `official` and not in `filtered`.
std::vector<std::uint8_t> informative_genes(const std::vector<std::string>& genes,
                                            const std::vector<std::string>& official,
                                            const std::vector<std::string>& filtered);

struct SelectOptions {
  std::int64_t n_genes_ova = 10;  // < 0: all (pairOT None)
  std::int64_t n_genes_ava = 3;   // < 0: all
  std::int64_t n_genes_max = -1;  // < 0: no cap
  double overlap_threshold = 0.3;
  std::int64_t overlap_n_genes = 10;
  bool remove_duplicates = true;

  static SelectOptions query() { return {}; }
  static SelectOptions reference() {
    SelectOptions o;
    o.n_genes_ova = -1;
    o.n_genes_ava = -1;
    return o;
  }
};

/// One cluster's marker list, sorted by logFC descending; rank = position.
struct MarkerList {
  std::vector<std::int64_t> gene;
  std::vector<double> log_fc;
  std::vector<std::int64_t> source;  // -1: from the OVA table, y: from the AVA table x vs y
  std::size_t size() const { return gene.size(); }
};

/// J (n_clusters × n_clusters, row-major) from the filtered OVA tables.
std::vector<double> scaled_jaccard(const DeResults& filtered, std::int64_t overlap_n_genes = 10);

/// pairOT's select_genes on filtered tables: one list per cluster.
std::vector<MarkerList> select_markers(const DeResults& filtered, const SelectOptions& options);

}  // namespace kotml::map
