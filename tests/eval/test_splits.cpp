// Invariants of the stratified donor splits: disjoint, stratified, seeded,
// independent of how many splits are drawn, and errors as scikit-learn raises them.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "kotml/core/error.hpp"
#include "kotml/eval/splits.hpp"

using namespace kotml;

namespace {
std::vector<int> labels_of(const std::vector<int>& counts) {
  std::vector<int> labels;
  // Interleaved, so that donors of a class are not contiguous.
  int left = 0;
  for (int c : counts) left += c;
  std::vector<int> remaining(counts);
  while (left > 0)
    for (std::size_t k = 0; k < remaining.size(); ++k)
      if (remaining[k] > 0) {
        labels.push_back(static_cast<int>(k));
        --remaining[k];
        --left;
      }
  return labels;
}
}  // namespace

TEST(EvalSplits, DisjointSortedAndStratified) {
  const auto labels = labels_of({10, 10, 10});
  const auto splits = eval::stratified_shuffle_splits(labels, 5, 0.6, std::nullopt, 42);
  ASSERT_EQ(splits.size(), 5u);
  for (const auto& s : splits) {
    EXPECT_EQ(s.train.size(), 18u);
    EXPECT_EQ(s.test.size(), 12u);
    EXPECT_TRUE(std::is_sorted(s.train.begin(), s.train.end()));
    EXPECT_TRUE(std::is_sorted(s.test.begin(), s.test.end()));
    std::set<std::int64_t> all(s.train.begin(), s.train.end());
    for (auto t : s.test) EXPECT_TRUE(all.insert(t).second) << "donor in train and test";
    EXPECT_EQ(all.size(), 30u);
    std::map<int, int> per_class;
    for (auto t : s.train) ++per_class[labels[static_cast<std::size_t>(t)]];
    for (const auto& [c, count] : per_class) EXPECT_EQ(count, 6);
  }
  // Different splits differ.
  EXPECT_NE(splits[0].train, splits[1].train);
}

TEST(EvalSplits, SeededAndIndependentOfSplitCount) {
  const auto labels = labels_of({7, 5, 9});
  const auto a = eval::stratified_shuffle_splits(labels, 4, 0.6, std::nullopt, 7);
  const auto b = eval::stratified_shuffle_splits(labels, 2, 0.6, std::nullopt, 7);
  const auto c = eval::stratified_shuffle_splits(labels, 2, 0.6, std::nullopt, 8);
  for (int s = 0; s < 2; ++s) {
    EXPECT_EQ(a[static_cast<std::size_t>(s)].train, b[static_cast<std::size_t>(s)].train);
    EXPECT_EQ(a[static_cast<std::size_t>(s)].test, b[static_cast<std::size_t>(s)].test);
  }
  EXPECT_NE(a[0].train, c[0].train);
}

TEST(EvalSplits, EveryDonorIsDrawnUniformly) {
  // Over many seeds each donor of a class lands in train with probability
  // n_train_c / n_c (6/10 here), within binomial noise (4 SD).
  const auto labels = labels_of({10, 10});
  std::vector<int> in_train(20, 0);
  const int rounds = 2000;
  for (int seed = 0; seed < rounds; ++seed) {
    const auto splits = eval::stratified_shuffle_splits(labels, 1, 0.6, std::nullopt, static_cast<std::uint64_t>(seed));
    for (auto t : splits[0].train) ++in_train[static_cast<std::size_t>(t)];
  }
  const double sd = std::sqrt(rounds * 0.6 * 0.4);
  for (int count : in_train) EXPECT_NEAR(count, rounds * 0.6, 4 * sd);
}

TEST(EvalSplits, ApproximateModeMatchesFloorsAndRemainders) {
  random::Stream stream(1, random::Purpose::splits, 0);
  EXPECT_EQ(eval::approximate_mode({5, 2}, 4, stream), (std::vector<std::int64_t>{3, 1}));
  EXPECT_EQ(eval::approximate_mode({10, 10, 10}, 18, stream), (std::vector<std::int64_t>{6, 6, 6}));
  const auto tied = eval::approximate_mode({2, 2, 2, 1}, 2, stream);
  EXPECT_EQ(tied[0] + tied[1] + tied[2] + tied[3], 2);
  EXPECT_EQ(tied[3], 0);  // smallest remainder never gets one
}

TEST(EvalSplits, ErrorsAsScikitLearn) {
  EXPECT_THROW(eval::stratified_shuffle_splits(labels_of({5, 1}), 1, 0.6, std::nullopt, 1), Error);
  EXPECT_THROW(eval::stratified_shuffle_splits(labels_of({2, 2, 2}), 1, 0.9, std::nullopt, 1), Error);
  EXPECT_THROW(eval::stratified_shuffle_splits(labels_of({5, 5}), 1, 0.0, std::nullopt, 1), Error);
  EXPECT_THROW(eval::stratified_shuffle_splits(labels_of({5, 5}), 1, 1.0, std::nullopt, 1), Error);
  EXPECT_THROW(eval::stratified_shuffle_splits(labels_of({5, 5}), 1, 0.7, 0.5, 1), Error);
  EXPECT_THROW(eval::stratified_shuffle_splits(labels_of({5, 5}), 0, 0.6, std::nullopt, 1), Error);
  EXPECT_EQ(eval::split_sizes(10, 0.6, std::nullopt).train, 6);
  EXPECT_EQ(eval::split_sizes(10, 0.6, 0.25).test, 3);  // ceil
  EXPECT_EQ(eval::split_sizes(7, 0.5, std::nullopt).train, 3);  // floor
}
