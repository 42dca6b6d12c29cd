#pragma once
// Agreement between a clustering and the true classes, as GGML-OT scores it:
// normalised mutual information with the arithmetic mean of the entropies and
// the adjusted Rand index (both as scikit-learn computes them, special cases
// included), and the variation of information H(U|V) + H(V|U) in nats (as the
// python-voi code GGML-OT carries). Labels are arbitrary non-negative integers;
// only the partition they induce matters.

#include <vector>

namespace kotml::eval {

/// scikit-learn's normalized_mutual_info_score(average_method="arithmetic").
double normalized_mutual_info(const std::vector<int>& truth, const std::vector<int>& predicted);

/// scikit-learn's adjusted_rand_score.
double adjusted_rand_index(const std::vector<int>& truth, const std::vector<int>& predicted);

/// Variation of information in nats: 2·H(U,V) − H(U) − H(V).
double variation_of_information(const std::vector<int>& truth, const std::vector<int>& predicted);

/// Mutual information in nats (scikit-learn's mutual_info_score).
double mutual_information(const std::vector<int>& truth, const std::vector<int>& predicted);

/// Shannon entropy of a labelling in nats.
double entropy(const std::vector<int>& labels);

}  // namespace kotml::eval
