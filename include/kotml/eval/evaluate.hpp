#pragma once
// Scores of one train/test split from the OT distances over its donors, as
// GGML-OT's _test: kNN accuracy of the test donors against the training donors,
// and complete-linkage clustering of all of them (training donors included) into
// as many clusters as there are classes, scored by NMI, ARI and VI.

#include <cstdint>
#include <vector>

#include "kotml/core/types.hpp"

namespace kotml::eval {

struct SplitScores {
  double knn_acc = 0.0;
  double mi = 0.0;   // normalised mutual information (arithmetic)
  double ari = 0.0;
  double vi = 0.0;   // nats
  std::vector<int> knn_predicted;  // per test donor
  std::vector<int> clusters;       // per donor of the matrix
  HostMatrix<double> distances;    // the matrix scored (score_split fills it)
};

/// distances: (n_train + n_test)², training donors first; labels: class index per
/// row of the matrix. Error if an entry is not finite or k exceeds n_train.
SplitScores evaluate_split(const HostMatrix<double>& distances, const std::vector<int>& labels,
                           std::int64_t n_train, int knn_k);

}  // namespace kotml::eval
