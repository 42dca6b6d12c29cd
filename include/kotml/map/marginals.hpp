#pragma once
// The OT marginals of pairOT 0.1 (tl/_dataset_ot.py, DatasetMap.init_problem).
//
// "balanced" (pairOT's default): sklearn's compute_class_weight("balanced"),
//   w_c = n / (K · n_c) for K clusters of sizes n_c (n cells), each cell gets its
//   cluster's weight, and the vector is divided by its sum, so a_i = w_c / Σ_c n_c w_c
//   = 1 / (K · n_c): every cluster carries 1/K of the mass.
// "uniform": a_i = 1/n (OTT's default when a is None). In pairOT a66c7cf
//   init_problem(marginals_distribution="uniform") raises TypeError (it asserts
//   np.array(None) > 0), so pairOT itself only ever runs "balanced".
//
// Clusters are codes 0..K-1 in pairOT's order, which is the cluster names
// sorted (cluster_labels): pp.rank_genes_limma rebuilds the label column with
// astype(str)...astype("category") as a side effect, so whatever category order
// the file had, DatasetMap numbers clusters by sorted name. Every cluster has
// cells (pairOT asserts that the codes cover all categories).

#include <cstdint>
#include <string>
#include <vector>

namespace kotml::map {

/// Sorted distinct names and each cell's code. Error (element "labels") on a cell
/// with an empty label (a missing value).
struct ClusterLabels {
  std::vector<std::string> names;
  std::vector<std::int32_t> codes;
};
ClusterLabels cluster_labels(const std::vector<std::string>& labels);

enum class MarginalKind { balanced, uniform };

/// "balanced" or "uniform"; Error (option "marginals") otherwise.
MarginalKind parse_marginal_kind(const std::string& name);

/// The mass of one cell of each cluster (K values), from the cluster sizes.
/// Error when a cluster is empty.
std::vector<double> cluster_cell_mass(const std::vector<std::int64_t>& cluster_sizes, MarginalKind kind);

/// Per-cell marginal: cluster_cell_mass[codes[i]]. Error when a code is outside
/// [0, n_clusters) or a cluster is empty.
std::vector<double> marginal(const std::vector<std::int32_t>& codes, std::int64_t n_clusters, MarginalKind kind);

/// Cells per cluster (K values). Error when a code is outside [0, n_clusters).
std::vector<std::int64_t> cluster_sizes(const std::vector<std::int32_t>& codes, std::int64_t n_clusters);

}  // namespace kotml::map
