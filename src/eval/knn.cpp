#include "kotml/eval/knn.hpp"

#include <algorithm>
#include <numeric>
#include <string>

#include "kotml/core/error.hpp"

namespace kotml::eval {

KnnResult knn_classify(const HostMatrix<double>& distances, const std::vector<int>& labels,
                       const std::vector<std::int64_t>& train_index,
                       const std::vector<std::int64_t>& test_index, int k) {
  const auto n_train = static_cast<std::int64_t>(train_index.size());
  if (k < 1) throw Error::option("knn-k", "must be at least 1, got " + std::to_string(k));
  if (k > n_train)
    throw Error::option("knn-k", "k = " + std::to_string(k) + " exceeds the " +
                                     std::to_string(n_train) + " training donors");
  int n_classes = 0;
  for (auto t : train_index) n_classes = std::max(n_classes, labels[static_cast<std::size_t>(t)] + 1);

  KnnResult result;
  std::vector<std::int64_t> order(static_cast<std::size_t>(n_train));
  std::vector<int> votes(static_cast<std::size_t>(n_classes));
  std::int64_t correct = 0;
  for (auto q : test_index) {
    std::iota(order.begin(), order.end(), std::int64_t(0));
    // Only the k nearest matter; the stable comparison (distance, then position
    // in train_index) makes the choice among equal distances reproducible.
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](std::int64_t a, std::int64_t b) {
                        const double da = distances(q, train_index[static_cast<std::size_t>(a)]);
                        const double db = distances(q, train_index[static_cast<std::size_t>(b)]);
                        return da < db || (da == db && a < b);
                      });
    std::fill(votes.begin(), votes.end(), 0);
    for (int r = 0; r < k; ++r)
      ++votes[static_cast<std::size_t>(labels[static_cast<std::size_t>(train_index[static_cast<std::size_t>(order[static_cast<std::size_t>(r)])])])];
    // max_element returns the first maximum: ties go to the smallest class index.
    const int predicted = static_cast<int>(std::max_element(votes.begin(), votes.end()) - votes.begin());
    result.predicted.push_back(predicted);
    if (predicted == labels[static_cast<std::size_t>(q)]) ++correct;
  }
  result.accuracy = test_index.empty() ? 0.0
                                       : static_cast<double>(correct) / static_cast<double>(test_index.size());
  return result;
}

}  // namespace kotml::eval
