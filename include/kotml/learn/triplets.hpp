#pragma once
// Triplets (i, j, k) of donors of one batch with label i = label j ≠ label k
// (j the anchor, i the positive, k the negative), and the unique unordered donor
// pairs they need, so that OT is solved once per pair however many triplets use
// it (GGML-OT's get_unique_triplet_pairs).

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

struct TripletSet {
  std::vector<Pair> pairs;           // unique, sorted
  std::vector<std::int32_t> ij;      // per triplet: index into pairs of {i, j}
  std::vector<std::int32_t> jk;      // per triplet: index into pairs of {j, k}
  std::int64_t size() const { return static_cast<std::int64_t>(ij.size()); }
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
