#include "kotml/learn/triplets.hpp"

#include <algorithm>
#include <map>
#include <string>

#include "kotml/core/error.hpp"

namespace kotml::learn {
namespace {

/// Collects triplets as (i, j, k), then replaces them by indices of the unique
/// sorted pairs. A dense B×B table keeps the lookup O(1).
class TripletBuilder {
 public:
  explicit TripletBuilder(std::int32_t batch) : batch_(batch), index_(static_cast<std::size_t>(batch) * static_cast<std::size_t>(batch), -1) {}

  void add(std::int32_t i, std::int32_t j, std::int32_t k) {
    ij_.push_back(mark(i, j));
    jk_.push_back(mark(j, k));
  }

  TripletSet finish() {
    TripletSet set;
    // Number the marked pairs in sorted order.
    std::int32_t next = 0;
    for (std::int32_t a = 0; a < batch_; ++a)
      for (std::int32_t b = a; b < batch_; ++b) {
        auto& slot = index_[static_cast<std::size_t>(a) * static_cast<std::size_t>(batch_) + static_cast<std::size_t>(b)];
        if (slot >= 0) {
          slot = next++;
          set.pairs.push_back({a, b});
        }
      }
    set.ij.reserve(ij_.size());
    set.jk.reserve(jk_.size());
    for (std::size_t t = 0; t < ij_.size(); ++t) {
      set.ij.push_back(index_[static_cast<std::size_t>(ij_[t])]);
      set.jk.push_back(index_[static_cast<std::size_t>(jk_[t])]);
    }
    return set;
  }

 private:
  std::int64_t mark(std::int32_t x, std::int32_t y) {
    const std::int32_t a = std::min(x, y), b = std::max(x, y);
    const std::int64_t slot = static_cast<std::int64_t>(a) * batch_ + b;
    index_[static_cast<std::size_t>(slot)] = 0;
    return slot;
  }

  std::int32_t batch_;
  std::vector<std::int32_t> index_;
  std::vector<std::int64_t> ij_, jk_;
};

}  // namespace

TripletSet all_triplets(const std::vector<int>& labels) {
  const auto b = static_cast<std::int64_t>(labels.size());
  std::map<int, std::int64_t> class_size;
  for (const int l : labels) ++class_size[l];
  TripletSet set;
  set.labels = labels;
  for (const auto& [label, n] : class_size) set.all_count += n * n * (b - n);
  // Pairs used: {i, j} within a class when some other class exists, {j, k}
  // across classes. Numbered in sorted order, as the listed scheme's.
  set.pair_of.assign(static_cast<std::size_t>(b * b), -1);
  const bool two_classes = class_size.size() > 1;
  std::int32_t next = 0;
  for (std::int64_t x = 0; x < b; ++x)
    for (std::int64_t y = x; y < b; ++y) {
      const bool same = labels[static_cast<std::size_t>(x)] == labels[static_cast<std::size_t>(y)];
      if (same && !two_classes) continue;
      set.pair_of[static_cast<std::size_t>(x * b + y)] = set.pair_of[static_cast<std::size_t>(y * b + x)] = next++;
      set.pairs.push_back({static_cast<std::int32_t>(x), static_cast<std::int32_t>(y)});
    }
  return set;
}

TripletSet sampled_triplets(const std::vector<int>& labels, int t, random::Stream& stream) {
  if (t < 1) throw Error::option("t", "must be at least 1, got " + std::to_string(t));
  std::map<int, std::vector<std::int32_t>> members;
  for (std::size_t i = 0; i < labels.size(); ++i) members[labels[i]].push_back(static_cast<std::int32_t>(i));
  bool replace = false;
  for (const auto& [c, m] : members) replace |= static_cast<int>(m.size()) < t;
  auto draw = [&](const std::vector<std::int32_t>& pool) {
    std::vector<std::int32_t> chosen;
    if (replace) {
      for (int r = 0; r < t; ++r) chosen.push_back(pool[static_cast<std::size_t>(stream.below(pool.size()))]);
      return chosen;
    }
    // Partial Fisher–Yates: t distinct members.
    std::vector<std::int32_t> p(pool);
    for (int r = 0; r < t; ++r) {
      const auto s = static_cast<std::size_t>(r) + static_cast<std::size_t>(stream.below(p.size() - static_cast<std::size_t>(r)));
      std::swap(p[static_cast<std::size_t>(r)], p[s]);
      chosen.push_back(p[static_cast<std::size_t>(r)]);
    }
    return chosen;
  };
  TripletBuilder builder(static_cast<std::int32_t>(labels.size()));
  for (std::size_t j = 0; j < labels.size(); ++j) {
    const int cj = labels[j];
    for (std::int32_t i : draw(members[cj]))
      for (const auto& [ck, pool] : members) {
        if (ck == cj) continue;
        for (std::int32_t k : draw(pool)) builder.add(i, static_cast<std::int32_t>(j), k);
      }
  }
  return builder.finish();
}

}  // namespace kotml::learn
