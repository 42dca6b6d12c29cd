#include "kotml/eval/protocol.hpp"

#include <map>
#include <string>

#include "kotml/core/error.hpp"

namespace kotml::eval {

std::vector<Split> protocol_splits(const data::Cohort& cohort, const ProtocolOptions& options) {
  if (cohort.n_classes() < 2)
    throw Error(cohort.source, cohort.options.label_col,
                "a single class ('" + (cohort.classes.empty() ? std::string() : cohort.classes[0]) +
                    "'): evaluation needs donors of at least two classes");
  const auto labels = cohort.labels();
  std::map<int, int> per_class;
  for (int l : labels) ++per_class[l];
  for (const auto& [c, count] : per_class)
    if (count < 2)
      throw Error(cohort.source, cohort.options.label_col,
                  "class '" + cohort.classes[static_cast<std::size_t>(c)] + "' has a single donor; a stratified split needs two");
  if (options.knn_k < 1) throw Error::option("knn-k", "must be at least 1, got " + std::to_string(options.knn_k));
  const std::vector<int> ints(labels.begin(), labels.end());
  auto splits = stratified_shuffle_splits(ints, options.n_splits, options.train_size, options.test_size, options.seed);
  for (const auto& s : splits)
    if (static_cast<std::int64_t>(s.train.size()) < options.knn_k)
      throw Error::option("knn-k", "k = " + std::to_string(options.knn_k) + " exceeds the " +
                                       std::to_string(s.train.size()) +
                                       " training donors of a split (raise --train-size or lower --knn-k)");
  return splits;
}

std::vector<GlobalId> split_donors(const Split& split) {
  std::vector<GlobalId> donors(split.train.begin(), split.train.end());
  donors.insert(donors.end(), split.test.begin(), split.test.end());
  return donors;
}

SplitScores score_split(const data::Cohort& cohort, const stage::DonorStore& store, const GroundMetric& metric,
                        const stage::OtSettings& settings, const Split& split, int knn_k, const dist::Comm& comm) {
  const auto donors = split_donors(split);
  settings.check_emd_size(cohort, donors);
  const auto d = distance_matrix(store, metric, settings, donors, comm);
  std::vector<int> labels;
  for (auto u : donors) labels.push_back(cohort.donors[static_cast<std::size_t>(u)].label);
  SplitScores scores;
  comm.phase([&] { scores = evaluate_split(d, labels, static_cast<std::int64_t>(split.train.size()), knn_k); });
  scores.distances = d;
  return scores;
}

SplitRecord split_record(int index, const Split& split, const SplitScores& scores) {
  SplitRecord record;
  record.split = index;
  record.n_train = static_cast<std::int64_t>(split.train.size());
  record.n_test = static_cast<std::int64_t>(split.test.size());
  record.knn_acc = scores.knn_acc;
  record.mi = scores.mi;
  record.ari = scores.ari;
  record.vi = scores.vi;
  return record;
}

}  // namespace kotml::eval
