#pragma once
// k-nearest-neighbour classification on a precomputed distance matrix, as
// scikit-learn's KNeighborsClassifier(metric="precomputed", weights="uniform"):
// each test donor takes the majority class of its k nearest training donors, a
// tied vote going to the smallest class index. Among training donors at equal
// distance the one listed first in train_index is nearer (scikit-learn leaves
// this to its partial sort, so results on distance ties may differ from it).

#include <cstdint>
#include <vector>

#include "kotml/core/types.hpp"

namespace kotml::eval {

struct KnnResult {
  std::vector<int> predicted;  // one class index per test donor, in test_index order
  double accuracy = 0.0;       // fraction of test donors predicted correctly
};

/// distances: the full donor×donor matrix (rows and columns indexed by donor);
/// labels: class index per donor; train_index/test_index: the donors of each side.
/// Error when k < 1 or k exceeds the number of training donors.
KnnResult knn_classify(const HostMatrix<double>& distances, const std::vector<int>& labels,
                       const std::vector<std::int64_t>& train_index,
                       const std::vector<std::int64_t>& test_index, int k);

}  // namespace kotml::eval
