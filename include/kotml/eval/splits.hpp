#pragma once
// Stratified shuffle splits at donor level, with scikit-learn's
// StratifiedShuffleSplit sizes: n_train = floor(train_size·n), n_test =
// ceil(test_size·n) (or the rest), per-class train counts by the same
// "approximate mode" of the multivariate hypergeometric, the test counts from
// what is left. Only the random choices differ: split s draws from
// random::Stream(seed, Purpose::splits, s), so a split never depends on the rank
// count or on how many splits were asked for before it.

#include <cstdint>
#include <optional>
#include <vector>

#include "kotml/core/random.hpp"

namespace kotml::eval {

struct Split {
  std::vector<std::int64_t> train;  // donor indices, increasing
  std::vector<std::int64_t> test;   // donor indices, increasing, disjoint from train
};

struct SplitSizes {
  std::int64_t train = 0;
  std::int64_t test = 0;
};

/// scikit-learn's _validate_shuffle_split for fractions: train_size (0,1), test_size
/// (0,1) or absent (then the rest). Error naming --train-size/--test-size otherwise.
SplitSizes split_sizes(std::int64_t n_samples, double train_size, std::optional<double> test_size);

/// Splits n_draws over classes in proportion to counts: floors first, then one more
/// for the largest remainders; equal remainders compete by a draw from `stream`
/// (scikit-learn's _approximate_mode, same arithmetic, our own random stream).
std::vector<std::int64_t> approximate_mode(const std::vector<std::int64_t>& counts,
                                           std::int64_t n_draws, random::Stream& stream);

/// n_splits stratified splits of donors whose class indices are `labels`
/// (0..C-1). Errors (kotml::Error) as scikit-learn raises them: a class with a
/// single donor, fewer train or test donors than classes, bad fractions.
std::vector<Split> stratified_shuffle_splits(const std::vector<int>& labels, int n_splits,
                                             double train_size, std::optional<double> test_size,
                                             std::uint64_t seed);

/// A uniformly random permutation of 0..n-1 (Fisher–Yates from `stream`).
std::vector<std::int64_t> random_permutation(std::int64_t n, random::Stream& stream);

}  // namespace kotml::eval
