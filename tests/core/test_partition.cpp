#include <gtest/gtest.h>

#include <numeric>

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
