#include "kotml/eval/evaluate.hpp"

#include <cmath>
#include <numeric>
#include <set>
#include <string>

#include "kotml/core/error.hpp"
#include "kotml/eval/knn.hpp"
#include "kotml/eval/linkage.hpp"
#include "kotml/eval/scores.hpp"

namespace kotml::eval {

SplitScores evaluate_split(const HostMatrix<double>& distances, const std::vector<int>& labels,
                           std::int64_t n_train, int knn_k) {
  const auto n = static_cast<std::int64_t>(distances.extent(0));
  if (static_cast<std::int64_t>(labels.size()) != n || static_cast<std::int64_t>(distances.extent(1)) != n)
    throw InternalError("distance matrix and labels disagree in size");
  if (n_train < 1 || n_train >= n)
    throw Error("", "split", "a split needs at least one training and one test donor");
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      if (!std::isfinite(distances(i, j)))
        throw Error("", "distances", "non-finite OT distance between donors " + std::to_string(i) +
                                         " and " + std::to_string(j));
  std::vector<std::int64_t> train(static_cast<std::size_t>(n_train)), test(static_cast<std::size_t>(n - n_train));
  std::iota(train.begin(), train.end(), std::int64_t(0));
  std::iota(test.begin(), test.end(), n_train);

  SplitScores scores;
  const auto knn = knn_classify(distances, labels, train, test, knn_k);
  scores.knn_acc = knn.accuracy;
  scores.knn_predicted = knn.predicted;
  const int n_classes = static_cast<int>(std::set<int>(labels.begin(), labels.end()).size());
  scores.clusters = agglomerative_complete(distances, n_classes);
  scores.mi = normalized_mutual_info(labels, scores.clusters);
  scores.ari = adjusted_rand_index(labels, scores.clusters);
  scores.vi = variation_of_information(labels, scores.clusters);
  return scores;
}

}  // namespace kotml::eval
