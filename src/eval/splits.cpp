#include "kotml/eval/splits.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "kotml/core/error.hpp"
#include "kotml/core/progress.hpp"

namespace kotml::eval {

SplitSizes split_sizes(std::int64_t n_samples, double train_size, std::optional<double> test_size) {
  if (!(train_size > 0.0 && train_size < 1.0))
    throw Error::option("train-size", "must be a fraction in (0, 1), got " + log::number_text(train_size));
  if (test_size && !(*test_size > 0.0 && *test_size < 1.0))
    throw Error::option("test-size", "must be a fraction in (0, 1), got " + log::number_text(*test_size));
  if (test_size && train_size + *test_size > 1.0)
    throw Error::option("test-size", "train size + test size = " +
                                         log::number_text(train_size + *test_size) +
                                         " exceeds 1");
  SplitSizes sizes;
  sizes.train = static_cast<std::int64_t>(std::floor(train_size * static_cast<double>(n_samples)));
  sizes.test = test_size
                   ? static_cast<std::int64_t>(std::ceil(*test_size * static_cast<double>(n_samples)))
                   : n_samples - sizes.train;
  if (sizes.train + sizes.test > n_samples)
    throw Error::option("test-size", "train (" + std::to_string(sizes.train) + ") plus test (" +
                                         std::to_string(sizes.test) + ") donors exceed the " +
                                         std::to_string(n_samples) + " donors");
  if (sizes.train == 0)
    throw Error::option("train-size", "leaves no training donor out of " + std::to_string(n_samples));
  return sizes;
}

std::vector<std::int64_t> approximate_mode(const std::vector<std::int64_t>& counts,
                                           std::int64_t n_draws, random::Stream& stream) {
  std::int64_t total = 0;
  for (auto c : counts) total += c;
  const std::size_t n = counts.size();
  std::vector<double> continuous(n), remainder(n);
  std::vector<std::int64_t> floored(n);
  std::int64_t placed = 0;
  for (std::size_t i = 0; i < n; ++i) {
    // Same operation order as scikit-learn (count / total · draws), so that the
    // floors, and hence the class sizes, agree to the bit.
    continuous[i] = static_cast<double>(counts[i]) / static_cast<double>(total) *
                    static_cast<double>(n_draws);
    const double f = std::floor(continuous[i]);
    floored[i] = static_cast<std::int64_t>(f);
    remainder[i] = continuous[i] - f;
    placed += floored[i];
  }
  std::int64_t need = n_draws - placed;
  if (need <= 0) return floored;
  std::vector<double> values(remainder);
  std::sort(values.begin(), values.end(), [](double a, double b) { return a > b; });
  values.erase(std::unique(values.begin(), values.end()), values.end());
  for (double value : values) {
    std::vector<std::int64_t> tied;
    for (std::size_t i = 0; i < n; ++i)
      if (remainder[i] == value) tied.push_back(static_cast<std::int64_t>(i));
    const std::int64_t add_now = std::min<std::int64_t>(static_cast<std::int64_t>(tied.size()), need);
    // A uniformly random subset of the tied classes: the first add_now of a
    // random permutation.
    const auto order = random_permutation(static_cast<std::int64_t>(tied.size()), stream);
    for (std::int64_t a = 0; a < add_now; ++a) ++floored[static_cast<std::size_t>(tied[static_cast<std::size_t>(order[static_cast<std::size_t>(a)])])];
    need -= add_now;
    if (need == 0) break;
  }
  return floored;
}

std::vector<std::int64_t> random_permutation(std::int64_t n, random::Stream& stream) {
  std::vector<std::int64_t> p(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) p[static_cast<std::size_t>(i)] = i;
  for (std::int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<std::int64_t>(stream.below(static_cast<std::uint64_t>(i + 1)));
    std::swap(p[static_cast<std::size_t>(i)], p[static_cast<std::size_t>(j)]);
  }
  return p;
}

std::vector<Split> stratified_shuffle_splits(const std::vector<int>& labels, int n_splits,
                                             double train_size, std::optional<double> test_size,
                                             std::uint64_t seed) {
  if (n_splits < 1)
    throw Error::option("n-splits", "must be at least 1, got " + std::to_string(n_splits));
  const auto n = static_cast<std::int64_t>(labels.size());
  const SplitSizes sizes = split_sizes(n, train_size, test_size);
  int n_classes = 0;
  for (int l : labels) {
    if (l < 0) throw InternalError("negative class index");
    n_classes = std::max(n_classes, l + 1);
  }
  std::vector<std::vector<std::int64_t>> members(static_cast<std::size_t>(n_classes));
  for (std::int64_t i = 0; i < n; ++i) members[static_cast<std::size_t>(labels[static_cast<std::size_t>(i)])].push_back(i);
  std::vector<std::int64_t> counts;
  for (int c = 0; c < n_classes; ++c) {
    const auto size = static_cast<std::int64_t>(members[static_cast<std::size_t>(c)].size());
    if (size < 2)
      throw Error("", "class " + std::to_string(c),
                  "has " + std::to_string(size) +
                      " donor(s); a stratified split needs at least 2 per class");
    counts.push_back(size);
  }
  if (sizes.train < n_classes)
    throw Error::option("train-size", "gives " + std::to_string(sizes.train) +
                                          " training donors, fewer than the " +
                                          std::to_string(n_classes) + " classes");
  if (sizes.test < n_classes)
    throw Error::option("train-size", "leaves " + std::to_string(sizes.test) +
                                          " test donors, fewer than the " +
                                          std::to_string(n_classes) + " classes");

  std::vector<Split> splits;
  for (int s = 0; s < n_splits; ++s) {
    random::Stream stream(seed, random::Purpose::splits, static_cast<std::uint64_t>(s));
    const auto n_train = approximate_mode(counts, sizes.train, stream);
    std::vector<std::int64_t> remaining(counts.size());
    for (std::size_t c = 0; c < counts.size(); ++c) remaining[c] = counts[c] - n_train[c];
    const auto n_test = approximate_mode(remaining, sizes.test, stream);
    Split split;
    for (std::size_t c = 0; c < counts.size(); ++c) {
      const auto order = random_permutation(counts[c], stream);
      for (std::int64_t r = 0; r < n_train[c] + n_test[c]; ++r) {
        const auto donor = members[c][static_cast<std::size_t>(order[static_cast<std::size_t>(r)])];
        (r < n_train[c] ? split.train : split.test).push_back(donor);
      }
    }
    std::sort(split.train.begin(), split.train.end());
    std::sort(split.test.begin(), split.test.end());
    splits.push_back(std::move(split));
  }
  return splits;
}

}  // namespace kotml::eval
