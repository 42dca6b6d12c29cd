#pragma once
// GGML-OT's train/test protocol (train_test and test): stratified donor splits,
// then per split the OT distances over its training and test donors (training
// donors first) under a metric, scored by kNN and clustering.

#include <cstdint>
#include <optional>
#include <vector>

#include "kotml/data/cohort.hpp"
#include "kotml/dist/comm.hpp"
#include "kotml/eval/distance_matrix.hpp"
#include "kotml/eval/evaluate.hpp"
#include "kotml/eval/splits.hpp"
#include "kotml/eval/summary.hpp"

namespace kotml::eval {

struct ProtocolOptions {
  int n_splits = 5;
  double train_size = 0.6;
  std::optional<double> test_size;
  int knn_k = 5;
  std::uint64_t seed = 42;
};

/// The splits of the cohort's donors, checked for what the protocol needs: at
/// least two classes, two donors per class, and at least knn_k training donors
/// in every split (Error naming the option otherwise).
std::vector<Split> protocol_splits(const data::Cohort& cohort, const ProtocolOptions& options);

/// The training donors followed by the test donors of a split.
std::vector<GlobalId> split_donors(const Split& split);

/// Collective. Distances over the split's donors under the metric, and scores.
SplitScores score_split(const data::Cohort& cohort, const stage::DonorStore& store, const GroundMetric& metric,
                        const stage::OtSettings& settings, const Split& split, int knn_k, const dist::Comm& comm);

/// The split's row of metrics.csv: its sizes and scores (the training fields
/// are left for a caller that trained).
SplitRecord split_record(int index, const Split& split, const SplitScores& scores);

}  // namespace kotml::eval
