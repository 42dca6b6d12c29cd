#pragma once
// Triplets (i, j, k) of donors of one batch with label i = label j ≠ label k
// (j the anchor, i the positive, k the negative), and the unique unordered donor
// pairs they need, so that OT is solved once per pair however many triplets use
// it (GGML-OT's get_unique_triplet_pairs).

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kotml/core/random.hpp"

namespace kotml::learn {

/// An unordered pair of batch positions, first ≤ second (first = second: a
/// donor with itself, used by the i = j triplets).
struct Pair {
  std::int32_t first = 0;
  std::int32_t second = 0;
  friend bool operator<(const Pair& x, const Pair& y) {
    return x.first < y.first || (x.first == y.first && x.second < y.second);
  }
  friend bool operator==(const Pair& x, const Pair& y) { return x.first == y.first && x.second == y.second; }
};

/// The triplets of one batch, in a fixed order, cut into chunks that a rank
/// takes whole (the loss is summed per chunk, then exactly over chunks).
///
/// Listed (the sampled scheme): per triplet, indices into `pairs` of {i, j} and
/// {j, k}; chunks of `listed_chunk` consecutive triplets.
/// All (GGML-OT's scheme): not listed, since there are Σ_c n_c²(B − n_c) of
/// them (250 million at 1000 donors, 2 GB of indices on every rank); the labels
/// and a B × B table of pair indices stand for them, in the order i, j, k
/// (outer to inner); chunk c is the triplets of positive i = c.
struct TripletSet {
  static constexpr std::int64_t listed_chunk = 4096;

  std::vector<Pair> pairs;           // unique, sorted
  std::vector<std::int32_t> ij;      // listed: per triplet, index into pairs of {i, j}
  std::vector<std::int32_t> jk;      // listed: per triplet, index into pairs of {j, k}
  std::vector<int> labels;           // all: per batch position (empty when listed)
  std::vector<std::int32_t> pair_of; // all: B × B, index into pairs of {a, b} (−1: none)
  std::int64_t all_count = 0;        // all: the number of triplets

  bool listed() const { return labels.empty(); }
  std::int64_t size() const { return listed() ? static_cast<std::int64_t>(ij.size()) : all_count; }
  std::int64_t chunks() const {
    return listed() ? (size() + listed_chunk - 1) / listed_chunk : static_cast<std::int64_t>(labels.size());
  }
  /// visit(ij, jk) for each triplet of chunk c, in order.
  template <class Visit>
  void for_each_in_chunk(std::int64_t c, Visit&& visit) const {
    if (listed()) {
      const std::int64_t end = std::min(size(), (c + 1) * listed_chunk);
      for (std::int64_t t = c * listed_chunk; t < end; ++t)
        visit(ij[static_cast<std::size_t>(t)], jk[static_cast<std::size_t>(t)]);
      return;
    }
    const auto b = static_cast<std::int64_t>(labels.size());
    const int label = labels[static_cast<std::size_t>(c)];
    for (std::int64_t j = 0; j < b; ++j) {
      if (labels[static_cast<std::size_t>(j)] != label) continue;
      const std::int32_t p = pair_of[static_cast<std::size_t>(c * b + j)];
      const std::int32_t* row = pair_of.data() + j * b;
      for (std::int64_t k = 0; k < b; ++k)
        if (labels[static_cast<std::size_t>(k)] != label) visit(p, row[k]);
    }
  }
};

/// Every (i, j, k) of the batch with labels[i] = labels[j] ≠ labels[k], i = j
/// included (GGML-OT's _create_triplets): Σ_c n_c² (B − n_c) triplets.
TripletSet all_triplets(const std::vector<int>& labels);

/// The sampled scheme of the GGML paper: for each anchor j, t positives of j's
/// class and, for every other class, t negatives, all pairs of them, so
/// B·t·t·(C−1) triplets. Draws are with replacement when some class of the batch
/// has fewer than t donors (as the paper's code), without otherwise.
TripletSet sampled_triplets(const std::vector<int>& labels, int t, random::Stream& stream);

}  // namespace kotml::learn
