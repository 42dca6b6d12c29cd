#include "kotml/learn/batches.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "kotml/core/error.hpp"
#include "kotml/core/random.hpp"

namespace kotml::learn {

std::int64_t round_half_even(double x) {
  const double lower = std::floor(x);
  const double fraction = x - lower;
  if (fraction > 0.5) return static_cast<std::int64_t>(lower) + 1;
  if (fraction < 0.5) return static_cast<std::int64_t>(lower);
  const auto l = static_cast<std::int64_t>(lower);
  return (l % 2 == 0) ? l : l + 1;
}

std::vector<std::vector<std::int64_t>> stratified_batches(const std::vector<int>& labels,
                                                          std::int64_t batch_size, std::uint64_t seed,
                                                          std::int64_t epoch) {
  if (batch_size < 1) throw Error::option("batch-size", "must be at least 1, got " + std::to_string(batch_size));
  const auto n = static_cast<std::int64_t>(labels.size());
  random::Stream stream(seed, random::Purpose::batches, static_cast<std::uint64_t>(epoch));
  std::vector<std::vector<std::int64_t>> batches;
  if (n == 0) return batches;
  if (batch_size >= n) {
    // One full batch; its order carries no meaning, so it stays sorted.
    std::vector<std::int64_t> all(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) all[static_cast<std::size_t>(i)] = i;
    batches.push_back(std::move(all));
    return batches;
  }
  std::map<int, std::vector<std::int64_t>> pools;
  for (std::int64_t i = 0; i < n; ++i) pools[labels[static_cast<std::size_t>(i)]].push_back(i);
  std::map<int, std::int64_t> quota, cursor;
  for (auto& [c, pool] : pools) {
    quota[c] = std::max<std::int64_t>(
        1, round_half_even(static_cast<double>(batch_size) * static_cast<double>(pool.size()) / static_cast<double>(n)));
    // Fisher–Yates per class, classes in sorted order.
    for (std::size_t i = pool.size(); i > 1; --i) {
      const auto j = static_cast<std::size_t>(stream.below(i));
      std::swap(pool[i - 1], pool[j]);
    }
    cursor[c] = 0;
  }
  while (true) {
    std::vector<std::int64_t> batch;
    for (auto& [c, pool] : pools) {
      const auto left = static_cast<std::int64_t>(pool.size()) - cursor[c];
      const auto take = std::min(quota[c], left);
      for (std::int64_t r = 0; r < take; ++r) batch.push_back(pool[static_cast<std::size_t>(cursor[c] + r)]);
      cursor[c] += take;
    }
    if (batch.empty()) break;
    std::sort(batch.begin(), batch.end());
    batches.push_back(std::move(batch));
  }
  return batches;
}

}  // namespace kotml::learn
