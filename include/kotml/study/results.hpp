#pragma once
// What a training run leaves behind: results.h5 (the metric, its gene loadings
// and top genes, the training history, evaluation metrics, and the effective
// configuration with the program version), and optionally a copy of the input
// .h5ad annotated as GGML-OT annotates it (uns/varm W_ggml, obsm X_ggml).
//
// results.h5 layout:
//   /A                          k×d metric (float64)
//   /features                   d feature names
//   /loadings/values            genes×k loadings (Aᵀ, or gene map · Aᵀ for an embedding)
//   /loadings/genes             gene names
//   /top_genes/index            k×top gene indices by |loading|, largest first
//   /top_genes/names            k×top names (flattened row-major; attribute shape)
//   /history/<field>            per epoch: epoch, loss, regularizer, grad_norm,
//                               min_grad_norm, seconds, steps, triplets, active_triplets
//   /splits/<s>/A, /splits/<s>/history/...   train-test: every split's metric
//   /splits/<s>/train_donors, test_donors      the split's donor ids
//   /metrics/<column>           train-test/test: per split knn_acc, mi, ari, vi, epoch_time_s
//   /metrics/summary_json       the summary.json text
//   root attributes: config (JSON), kotml_version, git_hash, kokkos, subcommand

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "kotml/data/cohort.hpp"
#include "kotml/eval/summary.hpp"
#include "kotml/learn/metric.hpp"
#include "kotml/learn/trainer.hpp"

namespace kotml::study {

struct SplitOutcome {
  learn::MetricMatrix a;
  std::vector<learn::EpochRecord> history;
  std::vector<std::string> train_donors;  // donor ids, so a peer can rerun the same split
  std::vector<std::string> test_donors;
};

struct RunRecord {
  std::string subcommand;
  nlohmann::json config;
  learn::MetricMatrix a;                         // the metric to report (best split for train-test); may be empty
  std::vector<learn::EpochRecord> history;       // of that metric
  std::vector<SplitOutcome> splits;       // train-test: every split
  std::vector<eval::SplitRecord> metrics; // train-test/test
  nlohmann::json summary;                 // summary.json content, or null
  std::int64_t top_genes = 20;
};

/// Gene names and loadings (genes×k) of a metric on the cohort's features.
std::vector<std::string> loading_gene_names(const data::Cohort& cohort);
std::vector<double> metric_loadings(const data::Cohort& cohort, const learn::MetricMatrix& a);

/// Writes results.h5 atomically (call on one rank).
void write_results(const std::string& path, const data::Cohort& cohort, const RunRecord& run);

/// Reads /A of a results.h5 (for kotml test/distances --metric learned).
learn::MetricMatrix read_metric(const std::string& path);

/// Copies the input .h5ad to `output` (atomically) and adds uns/W_ggml (k×d),
/// varm/W_ggml (genes×k loadings) and obsm/X_ggml (cells×k: the cells'
/// features, un-normalised as GGML-OT does, times Aᵀ). Call on one rank.
void write_annotated_h5ad(const std::string& output, const data::Cohort& cohort, const learn::MetricMatrix& a);

}  // namespace kotml::study
