#include "kotml/dist/partition.hpp"

#include <algorithm>
#include <numeric>

namespace kotml::dist {

std::vector<int> balance_by_cost(const std::vector<double>& cost, int n_ranks) {
  const std::size_t n = cost.size();
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t(0));
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return cost[a] > cost[b]; });
  std::vector<double> load(static_cast<std::size_t>(n_ranks), 0.0);
  std::vector<int> owner(n, 0);
  for (std::size_t unit : order) {
    const auto lightest = std::min_element(load.begin(), load.end());
    const int rank = static_cast<int>(lightest - load.begin());
    owner[unit] = rank;
    *lightest += cost[unit];
  }
  return owner;
}

std::vector<GlobalId> owned_units(const std::vector<int>& owner, int rank) {
  std::vector<GlobalId> units;
  for (std::size_t u = 0; u < owner.size(); ++u)
    if (owner[u] == rank) units.push_back(static_cast<GlobalId>(u));
  return units;
}

Block block_of(std::int64_t n, int n_ranks, int rank) {
  const std::int64_t base = n / n_ranks;
  const std::int64_t extra = n % n_ranks;
  const std::int64_t begin = rank * base + std::min<std::int64_t>(rank, extra);
  return {begin, begin + base + (rank < extra ? 1 : 0)};
}

}  // namespace kotml::dist
