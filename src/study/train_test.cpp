#include "kotml/study/train_test.hpp"

#include <algorithm>
#include <filesystem>

#include <Kokkos_Core.hpp>

#include "kotml/core/log.hpp"
#include "kotml/core/phase_timers.hpp"
#include "kotml/core/progress.hpp"
#include "kotml/eval/distance_matrix.hpp"
#include "kotml/stage/donor_store.hpp"
#include "kotml/eval/protocol.hpp"
#include "kotml/learn/loss.hpp"

namespace kotml::study {
namespace {

/// "split 3/5 (ETA 2:10)": the epoch progress line's context, with the ETA of
/// the splits from the mean time of those done.
std::string split_progress_text(int split, int n_splits, double seconds_so_far) {
  std::string text = "split " + std::to_string(split + 1) + "/" + std::to_string(n_splits);
  if (split > 0) text += " (ETA " + log::clock_text(seconds_so_far / split * (n_splits - split)) + ")";
  return text;
}

}  // namespace

std::string split_checkpoint(const std::string& base, int split) {
  const std::filesystem::path p(base);
  return (p.parent_path() / (p.stem().string() + "_split" + std::to_string(split) + p.extension().string())).string();
}

TrainTestResult train_test(data::CohortReader& reader, const std::vector<eval::Split>& splits,
                           const TrainTestOptions& options, const dist::Comm& comm,
                           const std::function<void(const eval::SplitRecord&)>& on_split) {
  const auto& cohort = reader.cohort();
  TrainTestResult result;
  const auto n_splits = static_cast<int>(splits.size());
  Kokkos::Timer splits_timer;
  for (int s = 0; s < n_splits; ++s) {
    const auto& split = splits[static_cast<std::size_t>(s)];
    const log::ProgressContext progress_context(split_progress_text(s, n_splits, splits_timer.seconds()));
    learn::TrainOptions split_options(options.train);
    if (!options.train.checkpoint_path.empty()) {
      split_options.checkpoint_path = split_checkpoint(options.train.checkpoint_path, s);
      if (options.restart && std::filesystem::exists(split_options.checkpoint_path))
        split_options.restart_from = split_options.checkpoint_path;
    }
    const auto trained = learn::train(reader, split.train, split_options, comm);
    // Then this rank holds the donors of its evaluation pairs only.
    timers::timed("read", [&] {
      reader.hold(eval::distance_donors_to_hold(cohort, eval::split_donors(split), comm.size(), comm.rank()));
    });
    const auto store = timers::timed(
        "stage", [&] { return stage::DonorStore(reader.cohort_for_staging(), stage::DonorStore::take_points); });

    eval::GroundMetric metric;
    metric.kind = eval::GroundMetric::Kind::learned;
    metric.squared = options.train.squared;
    metric.a = trained.a;
    const auto scores = timers::timed("evaluate", [&] {
      return eval::score_split(cohort, store, metric, options.train.ot, split, options.knn_k, comm);
    });
    auto record = eval::split_record(s, split, scores);
    record.epoch_time_s = trained.epoch_time_s;
    record.epoch_cpu_s = trained.epoch_cpu_s;
    std::vector<int> labels;
    for (auto u : eval::split_donors(split)) labels.push_back(cohort.donors[static_cast<std::size_t>(u)].label);
    record.test_loss = learn::hinge_loss_of_block(scores.distances, labels, record.n_train, options.train.alpha);
    record.epochs = trained.epochs_run;
    result.metrics.push_back(record);

    SplitOutcome outcome{trained.a, trained.history, {}, {}};
    for (auto u : split.train) outcome.train_donors.push_back(cohort.donors[static_cast<std::size_t>(u)].id);
    for (auto u : split.test) outcome.test_donors.push_back(cohort.donors[static_cast<std::size_t>(u)].id);
    result.splits.push_back(std::move(outcome));
    if (on_split) on_split(record);
  }
  for (std::size_t s = 1; s < result.metrics.size(); ++s)
    if (result.metrics[s].knn_acc > result.metrics[result.best].knn_acc) result.best = s;
  return result;
}

}  // namespace kotml::study
