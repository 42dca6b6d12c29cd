#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kotml/dist/pair_placement.hpp"
#include "kotml/dist/partition.hpp"

using namespace kotml::dist;

TEST(Partition, BalanceByCostCoversEveryUnitOnce) {
  std::vector<double> cost;
  for (int i = 0; i < 100; ++i) cost.push_back(1 + (i * 37) % 11);
  for (int ranks = 1; ranks <= 4; ++ranks) {
    const auto owner = balance_by_cost(cost, ranks);
    std::vector<double> load(ranks, 0.0);
    std::size_t covered = 0;
    for (int r = 0; r < ranks; ++r) covered += owned_units(owner, r).size();
    EXPECT_EQ(covered, cost.size());
    for (std::size_t u = 0; u < cost.size(); ++u) load[owner[u]] += cost[u];
    const double total = std::accumulate(cost.begin(), cost.end(), 0.0);
    const double largest = *std::max_element(cost.begin(), cost.end());
    for (double l : load) EXPECT_LE(l, total / ranks + largest);  // LPT bound
  }
}

TEST(Partition, BlocksAreContiguousAndBalanced) {
  for (int ranks = 1; ranks <= 5; ++ranks) {
    std::int64_t expected_begin = 0;
    for (int r = 0; r < ranks; ++r) {
      const auto b = block_of(17, ranks, r);
      EXPECT_EQ(b.begin, expected_begin);
      EXPECT_LE(b.end - b.begin, 17 / ranks + 1);
      EXPECT_GE(b.end - b.begin, 17 / ranks);
      expected_begin = b.end;
    }
    EXPECT_EQ(expected_begin, 17);
  }
}

namespace {
std::vector<std::int64_t> varied_sizes(int n) {
  std::vector<std::int64_t> sizes;
  for (int i = 0; i < n; ++i) sizes.push_back(200 + (i * 7919) % 900);
  return sizes;
}
}  // namespace

TEST(PairPlacement, EveryPairHasOneOwnerThatHoldsBothItems) {
  for (bool with_self : {false, true})
    for (int ranks = 1; ranks <= 12; ++ranks) {
      const PairPlacement placement(varied_sizes(23), ranks, with_self);
      EXPECT_EQ(placement.grid_rows() * placement.grid_cols(), ranks);
      EXPECT_LE(placement.grid_rows(), placement.grid_cols());
      std::vector<std::int64_t> owned(static_cast<std::size_t>(ranks), 0);
      for (std::int64_t i = 0; i < 23; ++i)
        for (std::int64_t j = with_self ? i : i + 1; j < 23; ++j) {
          const int o = placement.owner(i, j);
          ASSERT_GE(o, 0);
          ASSERT_LT(o, ranks);
          EXPECT_EQ(o, placement.owner(j, i));
          EXPECT_TRUE(placement.holds(o, i) && placement.holds(o, j)) << i << "," << j << " on " << ranks;
          ++owned[static_cast<std::size_t>(o)];
        }
      for (std::int64_t i = 0; i < 23; ++i) {
        const int h = placement.home(i);
        ASSERT_GE(h, 0);
        EXPECT_TRUE(placement.holds(h, i));
      }
      // A rank holds exactly the items of its pairs.
      for (int r = 0; r < ranks; ++r)
        for (auto i : placement.held_by(r)) {
          bool paired = false;
          for (std::int64_t j = 0; j < 23 && !paired; ++j)
            paired = (j != i || with_self) && placement.owner(i, j) == r;
          EXPECT_TRUE(paired) << "rank " << r << " holds " << i << " without a pair";
        }
    }
}

TEST(PairPlacement, HeldCellsFallAsTwoOverRootPAndLoadStaysBalanced) {
  const int n = 400;
  const auto sizes = varied_sizes(n);
  double total = 0.0, cells = 0.0, largest_size = 0.0;
  for (int i = 0; i < n; ++i) {
    cells += static_cast<double>(sizes[i]);
    largest_size = std::max(largest_size, static_cast<double>(sizes[i]));
    for (int j = i + 1; j < n; ++j) total += static_cast<double>(sizes[i]) * static_cast<double>(sizes[j]);
  }
  for (int ranks : {1, 2, 3, 4, 9, 16, 36, 64}) {
    const PairPlacement placement(sizes, ranks, false);
    double largest_load = 0.0, largest_held = 0.0;
    for (int r = 0; r < ranks; ++r) {
      largest_load = std::max(largest_load, placement.load(r));
      double held = 0.0;
      for (auto i : placement.held_by(r)) held += static_cast<double>(sizes[static_cast<std::size_t>(i)]);
      largest_held = std::max(largest_held, held);
    }
    // One row block and one column block of about equal cells: S/pr + S/pc,
    // plus up to one item per block cut.
    const double bound = cells / placement.grid_rows() + cells / placement.grid_cols() + 2 * largest_size;
    EXPECT_LE(largest_held, std::min(cells, bound)) << ranks << " ranks";
    if (ranks == 16 || ranks == 64) {
      EXPECT_LE(largest_held, 2.0 * cells / std::sqrt(ranks) + 2 * largest_size) << ranks << " ranks";
    }
    EXPECT_LE(largest_load, 1.15 * total / ranks) << ranks << " ranks";
  }
}

// The ranks wait at each step for the busiest home (H's sums and the donor's
// gradient), so the homes' Σ size stays near an even share.
TEST(PairPlacement, HomesAreHoldersAndBalancedBySize) {
  for (const auto& [n, ranks] : std::vector<std::pair<int, int>>{{200, 1024}, {200, 256}, {200, 64}, {200, 16},
                                                                  {23, 7}, {400, 36}, {60, 1024}}) {
    const std::vector<std::int64_t> equal(static_cast<std::size_t>(n), 50);
    for (const auto& sizes : {equal, varied_sizes(n)}) {
      const PairPlacement placement(sizes, ranks, false);
      std::vector<double> homed(static_cast<std::size_t>(ranks), 0.0);
      double total = 0.0, largest = 0.0;
      for (std::int64_t i = 0; i < n; ++i) {
        const int h = placement.home(i);
        ASSERT_GE(h, 0);
        EXPECT_TRUE(placement.holds(h, i));
        homed[static_cast<std::size_t>(h)] += static_cast<double>(sizes[static_cast<std::size_t>(i)]);
        total += static_cast<double>(sizes[static_cast<std::size_t>(i)]);
        largest = std::max(largest, static_cast<double>(sizes[static_cast<std::size_t>(i)]));
      }
      const double busiest = *std::max_element(homed.begin(), homed.end());
      // Each item can go only to its holders, about 2√P ranks, so allow one
      // item more than an even share.
      EXPECT_LE(busiest, total / ranks + largest) << n << " items on " << ranks << " ranks";
      if (ranks >= n && sizes == equal) {
        EXPECT_EQ(busiest, largest) << n << " items on " << ranks << " ranks";
      }
    }
  }
}
