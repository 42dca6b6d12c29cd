// eval against scikit-learn, scipy and GGML-OT reference values
// (fixtures/make_fixtures.py → fixtures/eval_reference.json).

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "kotml/core/error.hpp"
#include "kotml/eval/evaluate.hpp"
#include "kotml/eval/knn.hpp"
#include "kotml/eval/linkage.hpp"
#include "kotml/eval/mds.hpp"
#include "kotml/eval/scores.hpp"
#include "kotml/eval/splits.hpp"
#include "support/cli_runner.hpp"

using namespace kotml;

namespace {

const nlohmann::json& reference() {
  static const nlohmann::json j = [] {
    std::ifstream in(test::test_source_path("eval/fixtures/eval_reference.json"));
    EXPECT_TRUE(in.good()) << "missing fixture eval_reference.json";
    return nlohmann::json::parse(in);
  }();
  return j;
}

/// The full symmetric matrix from scipy's condensed upper triangle.
HostMatrix<double> square(const nlohmann::json& condensed) {
  const auto m = condensed.size();
  const auto n = static_cast<std::size_t>(std::llround((1.0 + std::sqrt(1.0 + 8.0 * static_cast<double>(m))) / 2.0));
  HostMatrix<double> d("reference_distances", n, n);
  std::size_t k = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j) {
      d(i, j) = condensed[k].get<double>();
      d(j, i) = d(i, j);
      ++k;
    }
  return d;
}

/// Two labellings describe the same partition (cluster numbers may differ).
bool same_partition(const std::vector<int>& a, const std::vector<int>& b) {
  if (a.size() != b.size()) return false;
  std::map<int, int> ab, ba;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (ab.count(a[i]) && ab[a[i]] != b[i]) return false;
    if (ba.count(b[i]) && ba[b[i]] != a[i]) return false;
    ab[a[i]] = b[i];
    ba[b[i]] = a[i];
  }
  return true;
}

}  // namespace

TEST(EvalReference, SplitClassSizesAreScikitLearns) {
  int checked = 0;
  for (const auto& c : reference()["split_sizes"]) {
    const auto counts = c["counts"].get<std::vector<int>>();
    std::vector<int> labels;
    for (std::size_t k = 0; k < counts.size(); ++k) labels.insert(labels.end(), static_cast<std::size_t>(counts[k]), static_cast<int>(k));
    const double train = c["train_size"].get<double>();
    std::optional<double> test;
    if (!c["test_size"].is_null()) test = c["test_size"].get<double>();
    if (c.contains("error")) {
      EXPECT_THROW(eval::stratified_shuffle_splits(labels, 1, train, test, 1), Error) << c.dump();
      continue;
    }
    std::set<std::vector<std::vector<int>>> expected, seen;
    for (const auto& o : c["outcomes"]) expected.insert(o.get<std::vector<std::vector<int>>>());
    // Enough seeds to see every way of breaking tied remainders.
    for (std::uint64_t seed = 0; seed < 150; ++seed) {
      for (const auto& split : eval::stratified_shuffle_splits(labels, 2, train, test, seed)) {
        std::vector<int> tr(counts.size()), te(counts.size());
        for (auto i : split.train) ++tr[static_cast<std::size_t>(labels[static_cast<std::size_t>(i)])];
        for (auto i : split.test) ++te[static_cast<std::size_t>(labels[static_cast<std::size_t>(i)])];
        EXPECT_EQ(static_cast<std::int64_t>(split.train.size()), c["n_train"].get<std::int64_t>());
        EXPECT_EQ(static_cast<std::int64_t>(split.test.size()), c["n_test"].get<std::int64_t>());
        seen.insert({tr, te});
      }
    }
    EXPECT_EQ(seen, expected) << c.dump();
    ++checked;
  }
  EXPECT_GT(checked, 40);
}

TEST(EvalReference, KnnPredictionsAreScikitLearns) {
  int rows = 0, ambiguous_skipped = 0;
  for (const auto& c : reference()["knn"]) {
    const auto d = square(c["condensed"]);
    const auto labels = c["labels"].get<std::vector<int>>();
    const auto n_train = c["n_train"].get<std::int64_t>();
    const auto n_test = c["n_test"].get<std::int64_t>();
    std::vector<std::int64_t> train, test;
    for (std::int64_t i = 0; i < n_train; ++i) train.push_back(i);
    for (std::int64_t i = 0; i < n_test; ++i) test.push_back(n_train + i);
    const auto result = eval::knn_classify(d, labels, train, test, c["k"].get<int>());
    const auto expected = c["predicted"].get<std::vector<int>>();
    ASSERT_EQ(result.predicted.size(), expected.size());
    if (!c.contains("ambiguous")) {
      EXPECT_EQ(result.predicted, expected) << c["kind"];
      EXPECT_DOUBLE_EQ(result.accuracy, c["accuracy"].get<double>());
      rows += static_cast<int>(expected.size());
      continue;
    }
    // Integer distances: compare where the vote does not hinge on which of
    // several equidistant neighbours is taken.
    const auto ambiguous = c["ambiguous"].get<std::vector<bool>>();
    for (std::size_t q = 0; q < expected.size(); ++q) {
      if (ambiguous[q]) {
        ++ambiguous_skipped;
        continue;
      }
      EXPECT_EQ(result.predicted[q], expected[q]) << "integer case, test row " << q;
      ++rows;
    }
  }
  EXPECT_GE(rows, 90);
  EXPECT_LT(ambiguous_skipped, rows / 2);
}

TEST(EvalReference, KnnRejectsKBeyondTrainingDonors) {
  HostMatrix<double> d("d", 4, 4);
  EXPECT_THROW(eval::knn_classify(d, {0, 1, 0, 1}, {0, 1}, {2, 3}, 3), Error);
  EXPECT_THROW(eval::knn_classify(d, {0, 1, 0, 1}, {0, 1}, {2, 3}, 0), Error);
}

TEST(EvalReference, CompleteLinkageTreeIsScipys) {
  for (const auto& c : reference()["clustering"]) {
    const auto d = square(c["condensed"]);
    const auto merges = eval::complete_linkage(d);
    const auto z = c["linkage"].get<std::vector<double>>();
    ASSERT_EQ(merges.size() * 4, z.size());
    for (std::size_t i = 0; i < merges.size(); ++i) {
      EXPECT_EQ(merges[i].left, static_cast<std::int64_t>(z[4 * i])) << c["kind"] << " merge " << i;
      EXPECT_EQ(merges[i].right, static_cast<std::int64_t>(z[4 * i + 1])) << c["kind"] << " merge " << i;
      EXPECT_EQ(merges[i].height, z[4 * i + 2]);  // a maximum of inputs: no rounding
      EXPECT_EQ(merges[i].size, static_cast<std::int64_t>(z[4 * i + 3]));
    }
  }
}

TEST(EvalReference, AgglomerativeLabelsAndScoresAreScikitLearns) {
  for (const auto& c : reference()["clustering"]) {
    const auto d = square(c["condensed"]);
    const auto labels = eval::agglomerative_complete(d, c["n_clusters"].get<int>());
    const auto expected = c["labels"].get<std::vector<int>>();
    EXPECT_TRUE(same_partition(labels, expected)) << c["kind"] << " n=" << c["n"];
    const auto truth = c["truth"].get<std::vector<int>>();
    EXPECT_NEAR(eval::normalized_mutual_info(truth, labels), c["nmi"].get<double>(), 1e-12);
    EXPECT_NEAR(eval::adjusted_rand_index(truth, labels), c["ari"].get<double>(), 1e-12);
    EXPECT_NEAR(eval::variation_of_information(truth, labels), c["vi"].get<double>(), 1e-12);
  }
}

TEST(EvalReference, ScoresAreScikitLearnsAndGgmlOts) {
  for (const auto& c : reference()["scores"]) {
    const auto a = c["truth"].get<std::vector<int>>();
    const auto b = c["predicted"].get<std::vector<int>>();
    EXPECT_NEAR(eval::normalized_mutual_info(a, b), c["nmi"].get<double>(), 1e-12) << c.dump();
    EXPECT_NEAR(eval::adjusted_rand_index(a, b), c["ari"].get<double>(), 1e-12) << c.dump();
    EXPECT_NEAR(eval::mutual_information(a, b), c["mi"].get<double>(), 1e-12) << c.dump();
    EXPECT_NEAR(eval::variation_of_information(a, b), c["vi"].get<double>(), 1e-12) << c.dump();
  }
}

TEST(EvalReference, ClassicalMdsIsScikitLearns) {
  for (const auto& c : reference()["mds"]) {
    const auto d = square(c["condensed"]);
    const auto mds = eval::classical_mds(d, 2);
    const auto emb = c["embedding"].get<std::vector<double>>();
    const auto eig = c["eigenvalues"].get<std::vector<double>>();
    for (int k = 0; k < 2; ++k) EXPECT_NEAR(mds.eigenvalues[static_cast<std::size_t>(k)], eig[static_cast<std::size_t>(k)], 1e-9 * eig[0]);
    const std::size_t n = d.extent(0);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t k = 0; k < 2; ++k)
        EXPECT_NEAR(mds.embedding(i, k), emb[2 * i + k], 1e-8) << c["kind"] << " row " << i;
  }
}

TEST(EvalReference, MdsRecoversPlanarConfiguration) {
  // Points in a plane: MDS reproduces all distances exactly (up to rotation).
  const double x[5][2] = {{0, 0}, {3, 0}, {0, 4}, {-2, 1}, {1, -3}};
  HostMatrix<double> d("d", 5, 5);
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 5; ++j) d(i, j) = std::hypot(x[i][0] - x[j][0], x[i][1] - x[j][1]);
  const auto mds = eval::classical_mds(d, 2);
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 5; ++j)
      EXPECT_NEAR(std::hypot(mds.embedding(i, 0) - mds.embedding(j, 0), mds.embedding(i, 1) - mds.embedding(j, 1)),
                  d(i, j), 1e-10);
}

TEST(EvalReference, EvaluateSplitScoresPerfectSeparation) {
  // Two tight classes far apart: every score is perfect; training donors first.
  const std::vector<int> labels = {0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1};
  const std::size_t n = labels.size();
  HostMatrix<double> d("d", n, n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j)
      d(i, j) = i == j ? 0.0 : (labels[i] == labels[j] ? 0.1 + 0.01 * static_cast<double>((i + j) % 5) : 5.0);
  const auto s = eval::evaluate_split(d, labels, 10, 5);
  EXPECT_DOUBLE_EQ(s.knn_acc, 1.0);
  EXPECT_DOUBLE_EQ(s.ari, 1.0);
  EXPECT_DOUBLE_EQ(s.mi, 1.0);
  EXPECT_NEAR(s.vi, 0.0, 1e-15);
  d(3, 4) = std::nan("");
  EXPECT_THROW(eval::evaluate_split(d, labels, 10, 5), Error);
}
