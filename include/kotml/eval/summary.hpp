#pragma once
// Aggregation and reporting of per-split scores: mean and population SD over
// splits (numpy's default ddof = 0, as GGML-OT), a markdown table with GGML-OT's
// columns knn_acc | mi | ari | vi | epoch_time(s), metrics.csv (one row per
// split) and summary.json.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kotml::eval {

struct SplitRecord {
  int split = 0;
  std::int64_t n_train = 0;
  std::int64_t n_test = 0;
  double knn_acc = 0.0;
  double mi = 0.0;
  double ari = 0.0;
  double vi = 0.0;
  std::optional<double> epoch_time_s;  // absent when nothing was trained (kotml test)
  std::optional<std::int64_t> epochs;  // epochs run, when trained
  std::optional<double> epoch_cpu_s;   // CPU seconds per epoch (largest over ranks), when trained
  std::optional<double> test_loss;     // triplet loss (margin alpha) among the test donors, when trained
};

struct MeanSd {
  double mean = 0.0;
  double sd = 0.0;  // population SD
};

/// Mean and population standard deviation; {0, 0} for no values.
MeanSd mean_sd(const std::vector<double>& values);

struct Summary {
  MeanSd knn_acc, mi, ari, vi;
  std::optional<MeanSd> epoch_time_s;
  int n_splits = 0;
  int ranks = 1;
};

Summary summarize(const std::vector<SplitRecord>& splits, int ranks);

/// One row per (name, summary): "| setup | knn_acc | mi | ari | vi | epoch_time(s) |"
/// with cells "mean ± sd" to two decimals; "-" where a column does not apply.
std::string markdown_table(const std::vector<std::pair<std::string, Summary>>& rows);

/// metrics.csv: header split,n_train,n_test,knn_acc,mi,ari,vi,epoch_time_s,epochs,
/// epoch_cpu_s,test_loss (empty cells where a value does not apply).
std::string metrics_csv(const std::vector<SplitRecord>& splits);

/// summary.json: {"knn_acc": {"mean", "sd"}, "mi": ..., "ari": ..., "vi": ...,
/// "epoch_time_s": {"mean", "sd"} or null, "n_splits", "ranks"}.
nlohmann::json summary_json(const Summary& summary);

}  // namespace kotml::eval
