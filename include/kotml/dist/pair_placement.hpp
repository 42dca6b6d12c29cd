#pragma once
// Placement of the unordered pairs {i, j} of N items (donors, by position) on P
// ranks, so that a rank needs only the items of its own pairs.
//
// The N×N pair matrix is cut into a pr × pc grid of blocks, one per rank
// (rank = r·pc + c), with pr the largest divisor of P not above √P. Items are
// split into pr contiguous row blocks and, separately, pc contiguous column
// blocks, each block holding about the same Σ size (the cost of a pair is
// size_i·size_j, so equal Σ size gives equal block products). A pair i < j
// lies in two cells of the symmetric matrix, (R(i), C(j)) and (R(j), C(i)); it
// goes to the first when i + j is even and to the second when odd, which
// splits every off-diagonal block's pairs evenly between its two mirror cells.
// A self pair {i, i} goes to (R(i), C(i)).
//
// A rank therefore holds at most one row block and one column block: about
// N/pr + N/pc items, 2N/√P on a square grid, instead of N. With P prime the
// grid is 1 × P and every rank holds about N items (the load stays balanced).
//
// Each item also gets a home among its holders. Items are taken in turn from
// the row blocks, each block's largest first (then by position), each to the
// holder with the least Σ size of homes so far (ties: the first such holder
// from position i mod holders on, cyclically, which spreads the ties). The
// ranks wait at each step for the busiest home; in the cases the tests check
// it stays within one item of an even share, where the holder at position
// i mod holders put two donors on some homes at 256 and 1024 ranks.
//
// Every rank computes the same placement from the same sizes, without
// communication. Results that sum exactly (dist::ExactSum) or gather by pair
// id do not depend on it.

#include <cstdint>
#include <vector>

namespace kotml::dist {

class PairPlacement {
 public:
  /// sizes[i] ≥ 0: the weight of item i in the balance (its cells).
  /// with_self: the self pairs {i, i} are placed too.
  PairPlacement(const std::vector<std::int64_t>& sizes, int n_ranks, bool with_self);

  int grid_rows() const { return rows_; }
  int grid_cols() const { return cols_; }
  std::int64_t items() const { return static_cast<std::int64_t>(row_block_.size()); }

  /// The rank that owns pair {i, j} (positions, either order).
  int owner(std::int64_t i, std::int64_t j) const;
  /// Whether `rank` owns a pair with item i (so holds its points).
  bool holds(int rank, std::int64_t i) const;
  /// The positions of the items `rank` holds, increasing.
  std::vector<std::int64_t> held_by(int rank) const;
  /// One rank that holds item i, for the per-item work that needs its points
  /// (summing a donor's parts of H from its holders, mapping its gradient).
  /// Homes are balanced by Σ size (see the constructor). -1 when no pair
  /// holds i (a single item without self pairs).
  int home(std::int64_t i) const;
  /// Σ size_i·size_j over the pairs `rank` owns.
  double load(int rank) const;

 private:
  void place_homes(int n_ranks);

  int rows_ = 1, cols_ = 1;
  bool with_self_ = false;
  std::vector<int> row_block_, col_block_;
  std::vector<std::int64_t> sizes_;
  std::vector<std::vector<int>> holders_;  // per item, increasing ranks
  std::vector<int> home_;                  // per item
};

}  // namespace kotml::dist
