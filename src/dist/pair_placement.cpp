#include "kotml/dist/pair_placement.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace kotml::dist {
namespace {

/// Block index of each item for `blocks` contiguous blocks of about equal Σ
/// size: item i goes to block ⌊blocks · (Σ_{k<i} s_k + s_i/2) / Σ s⌋, its
/// midpoint's share of the total, so a heavy item is not pushed past its block.
std::vector<int> contiguous_blocks(const std::vector<std::int64_t>& sizes, int blocks) {
  std::vector<int> block(sizes.size(), 0);
  double total = 0.0;
  for (auto s : sizes) total += static_cast<double>(s);
  double before = 0.0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const double s = static_cast<double>(sizes[i]);
    // Items of size zero (or an all-zero total) are placed by count instead.
    const double share = total > 0.0 ? (before + 0.5 * s) / total
                                     : (static_cast<double>(i) + 0.5) / static_cast<double>(sizes.size());
    block[i] = std::min(blocks - 1, static_cast<int>(std::floor(share * blocks)));
    before += s;
  }
  return block;
}

}  // namespace

PairPlacement::PairPlacement(const std::vector<std::int64_t>& sizes, int n_ranks, bool with_self)
    : with_self_(with_self), sizes_(sizes) {
  if (n_ranks < 1) throw std::logic_error("PairPlacement: " + std::to_string(n_ranks) + " ranks");
  for (int r = 1; static_cast<long long>(r) * r <= n_ranks; ++r)
    if (n_ranks % r == 0) rows_ = r;
  cols_ = n_ranks / rows_;
  row_block_ = contiguous_blocks(sizes, rows_);
  col_block_ = contiguous_blocks(sizes, cols_);
  const auto n = items();
  holders_.assign(static_cast<std::size_t>(n), {});
  const auto add = [&](std::int64_t i, int rank) {
    auto& h = holders_[static_cast<std::size_t>(i)];
    const auto at = std::lower_bound(h.begin(), h.end(), rank);
    if (at == h.end() || *at != rank) h.insert(at, rank);
  };
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = with_self ? i : i + 1; j < n; ++j) {
      const int o = owner(i, j);
      add(i, o);
      add(j, o);
    }
  place_homes(n_ranks);
}

void PairPlacement::place_homes(int n_ranks) {
  // Each row block's items largest first (then by position), and the blocks
  // taken in turn: block by block, the first blocks' items would fill the
  // holders they share with later blocks, which then find them taken.
  const auto n = static_cast<std::size_t>(items());
  std::vector<std::vector<std::size_t>> by_block(static_cast<std::size_t>(rows_));
  for (std::size_t i = 0; i < n; ++i) by_block[static_cast<std::size_t>(row_block_[i])].push_back(i);
  std::size_t longest = 0;
  for (auto& block : by_block) {
    std::stable_sort(block.begin(), block.end(), [&](std::size_t x, std::size_t y) { return sizes_[x] > sizes_[y]; });
    longest = std::max(longest, block.size());
  }
  std::vector<std::size_t> order;
  for (std::size_t t = 0; t < longest; ++t)
    for (const auto& block : by_block)
      if (t < block.size()) order.push_back(block[t]);
  std::vector<double> homed(static_cast<std::size_t>(n_ranks), 0.0);  // Σ size of each rank's homes
  home_.assign(n, -1);
  for (const std::size_t i : order) {
    const auto& h = holders_[i];
    if (h.empty()) continue;
    int best = -1;
    for (std::size_t q = 0; q < h.size(); ++q) {
      const int rank = h[(i + q) % h.size()];
      if (best < 0 || homed[static_cast<std::size_t>(rank)] < homed[static_cast<std::size_t>(best)]) best = rank;
    }
    home_[i] = best;
    homed[static_cast<std::size_t>(best)] += static_cast<double>(sizes_[i]);
  }
}

int PairPlacement::owner(std::int64_t i, std::int64_t j) const {
  if (i > j) std::swap(i, j);
  const auto cell = [&](std::int64_t row_item, std::int64_t col_item) {
    return row_block_[static_cast<std::size_t>(row_item)] * cols_ + col_block_[static_cast<std::size_t>(col_item)];
  };
  return ((i + j) % 2 == 0) ? cell(i, j) : cell(j, i);
}

bool PairPlacement::holds(int rank, std::int64_t i) const {
  const auto& h = holders_[static_cast<std::size_t>(i)];
  return std::binary_search(h.begin(), h.end(), rank);
}

std::vector<std::int64_t> PairPlacement::held_by(int rank) const {
  std::vector<std::int64_t> held;
  for (std::int64_t i = 0; i < items(); ++i)
    if (holds(rank, i)) held.push_back(i);
  return held;
}

int PairPlacement::home(std::int64_t i) const { return home_[static_cast<std::size_t>(i)]; }

double PairPlacement::load(int rank) const {
  double sum = 0.0;
  for (std::int64_t i = 0; i < items(); ++i)
    for (std::int64_t j = with_self_ ? i : i + 1; j < items(); ++j)
      if (owner(i, j) == rank)
        sum += static_cast<double>(sizes_[static_cast<std::size_t>(i)]) * static_cast<double>(sizes_[static_cast<std::size_t>(j)]);
  return sum;
}

}  // namespace kotml::dist
