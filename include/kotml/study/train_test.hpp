#pragma once
// GGML-OT's train_test protocol as a library call: for each stratified donor
// split, train A on the training donors, compute the OT distances over the
// split's training and test donors under A, and score them (kNN accuracy, MI,
// ARI, VI, and the triplet loss among the test donors). `kotml train-test` and
// the scaling driver run it.
//
// Per split, each rank holds the donors its training needs (learn::train with
// the reader: its pairs' donors, or one batch at a time in mode batches), then
// those of its evaluation pairs (eval::distance_donors_to_hold), releasing the
// others, so memory follows the placement, not the cohort.
// Split s checkpoints to <stem>_split<s><ext> of the checkpoint path, and a
// restart continues every split that has one.

#include <functional>
#include <string>
#include <vector>

#include "kotml/data/cohort_reader.hpp"
#include "kotml/dist/comm.hpp"
#include "kotml/eval/splits.hpp"
#include "kotml/eval/summary.hpp"
#include "kotml/study/results.hpp"
#include "kotml/learn/trainer.hpp"

namespace kotml::study {

struct TrainTestOptions {
  learn::TrainOptions train;            // checkpoint_path: the base name of the per-split checkpoints
  int knn_k = 5;
  bool restart = false;          // continue each split from its checkpoint when there is one
};

struct TrainTestResult {
  std::vector<eval::SplitRecord> metrics;  // per split
  std::vector<SplitOutcome> splits;        // per split: A, history, donor ids
  std::size_t best = 0;                    // GGML-OT's "best": highest kNN accuracy, first on ties
};

/// "<stem>_split<s><ext>" of a checkpoint path.
std::string split_checkpoint(const std::string& base, int split);

/// Collective. Runs the protocol on the given splits of the reader's cohort.
/// on_split, when given, is called on every rank after each split (progress,
/// a line per split).
TrainTestResult train_test(data::CohortReader& reader, const std::vector<eval::Split>& splits,
                           const TrainTestOptions& options, const dist::Comm& comm,
                           const std::function<void(const eval::SplitRecord&)>& on_split = {});

}  // namespace kotml::study
