#pragma once
// The routes of Comm::alltoallv's two-hop exchange.
//
// The P ranks are laid out row by row in rows of w = ⌈√P⌉ (the last row may be
// short). A value from rank s for rank d travels in two hops:
//   1. along s's row, to via(s, column(d)): the rank of s's row in d's column;
//   2. down d's column, to d.
// Where s lies in a short last row that has no rank in d's column, the rank
// above that gap (the previous row is always full) forwards for s.
//
// Why: in a direct exchange the busiest rank posts a request for every rank it
// hears from, up to P − 1 of them; an exchange where many ranks send to each
// owner (the DE transpose of map, every rank to every gene owner) then costs
// P² requests, and SimGrid's matching of them grows faster than that (300
// owners × 255 senders of 400 bytes took 62 s of simulation at 256 ranks while
// a build shared the machine, 0.5 s through the grid). Through the grid a rank sends to at most w ranks and
// hears from at most 2w in the first hop, and from at most ⌈P/w⌉ in the second,
// for twice the volume.

#include <vector>

namespace kotml::dist {

class ExchangeGrid {
 public:
  explicit ExchangeGrid(int ranks);

  int ranks() const { return ranks_; }
  /// Ranks per row, ⌈√P⌉.
  int width() const { return width_; }
  int column_of(int rank) const { return rank % width_; }
  /// The ranks of column c, ascending.
  std::vector<int> column(int c) const;
  /// The rank that forwards rank s's values for the ranks of column c (s itself
  /// for its own column).
  int via(int s, int c) const;
  /// The ranks whose values for m's column m forwards, ascending (m included):
  /// m's row, and the short last row where m has no rank below it.
  std::vector<int> sources_through(int m) const;

 private:
  int ranks_ = 1, width_ = 1;
};

}  // namespace kotml::dist
