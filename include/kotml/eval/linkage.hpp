#pragma once
// Complete-linkage agglomerative clustering of a precomputed distance matrix, as
// scikit-learn's AgglomerativeClustering(linkage="complete", metric="precomputed"),
// which hands the upper triangle to scipy.cluster.hierarchy.linkage. The tree is
// built by the nearest-neighbour-chain algorithm (O(n²) time and memory) with
// scipy's tie conventions, merges are stably sorted by height and numbered as
// scipy numbers them, so the dendrogram is scipy's row for row.

#include <cstdint>
#include <vector>

#include "kotml/core/types.hpp"

namespace kotml::eval {

/// One merge in scipy's linkage-matrix form: clusters `left` < `right` (ids below
/// n are donors, n + i is the cluster made by merge i) join at `height`.
struct Merge {
  std::int64_t left = 0;
  std::int64_t right = 0;
  double height = 0.0;
  std::int64_t size = 0;
};

/// The n−1 merges of the complete-linkage tree over the upper triangle of
/// `distances` (n×n). Error for non-finite entries.
std::vector<Merge> complete_linkage(const HostMatrix<double>& distances);

/// Flat clusters from the first n − n_clusters merges (undoing the last
/// n_clusters − 1, as scikit-learn's cut). Cluster numbers follow the order in
/// which clusters first appear among donors 0, 1, 2, ...
std::vector<int> cut_tree(const std::vector<Merge>& merges, std::int64_t n_leaves, int n_clusters);

/// complete_linkage + cut_tree.
std::vector<int> agglomerative_complete(const HostMatrix<double>& distances, int n_clusters);

}  // namespace kotml::eval
