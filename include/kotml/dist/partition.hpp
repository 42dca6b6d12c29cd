#pragma once
// Assignment of work units (donor pairs, graph sources, splits) to ranks.

#include <cstdint>
#include <vector>

#include "kotml/core/types.hpp"

namespace kotml::dist {

/// Owner rank of each unit, balancing the summed cost per rank by the greedy
/// longest-processing-time rule: units in decreasing cost (ties by global id) go
/// to the least loaded rank (ties to the lowest rank). Every rank computes the
/// same answer from the same costs, with no communication.
std::vector<int> balance_by_cost(const std::vector<double>& cost, int n_ranks);

/// The units a rank owns, in increasing global id.
std::vector<GlobalId> owned_units(const std::vector<int>& owner, int rank);

/// Contiguous block [begin, end) of n items for a rank, sizes differing by at most one.
struct Block {
  std::int64_t begin;
  std::int64_t end;
};
Block block_of(std::int64_t n, int n_ranks, int rank);

}  // namespace kotml::dist
