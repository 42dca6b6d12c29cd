#include "kotml/learn/loss.hpp"

#include <string>

#include "kotml/core/error.hpp"

namespace kotml::learn {

HingeLoss hinge_loss(const TripletSet& triplets, const std::vector<double>& pair_cost, double alpha) {
  if (pair_cost.size() != triplets.pairs.size())
    throw InternalError("triplet loss: one cost per pair expected");
  HingeLoss result;
  result.n_triplets = triplets.size();
  result.d_pair_cost.assign(pair_cost.size(), 0.0);
  if (result.n_triplets == 0) return result;
  // Counts first, scaled once at the end: exact for any number of triplets.
  std::vector<std::int64_t> up(pair_cost.size(), 0), down(pair_cost.size(), 0);
  double total = 0.0;
  for (std::int64_t t = 0; t < result.n_triplets; ++t) {
    const auto p = static_cast<std::size_t>(triplets.ij[static_cast<std::size_t>(t)]);
    const auto q = static_cast<std::size_t>(triplets.jk[static_cast<std::size_t>(t)]);
    const double margin = pair_cost[p] - pair_cost[q] + alpha;
    if (margin > 0.0) {
      total += margin;
      ++result.n_active;
      ++up[p];
      ++down[q];
    }
  }
  const double scale = 1.0 / static_cast<double>(result.n_triplets);
  result.value = total * scale;
  for (std::size_t p = 0; p < pair_cost.size(); ++p)
    result.d_pair_cost[p] = static_cast<double>(up[p] - down[p]) * scale;
  return result;
}

double hinge_loss_of_block(const HostMatrix<double>& distances, const std::vector<int>& labels,
                           std::int64_t first, double alpha) {
  const std::vector<int> block(labels.begin() + first, labels.end());
  const auto triplets = all_triplets(block);
  std::vector<double> cost;
  for (const auto& p : triplets.pairs)
    cost.push_back(distances(static_cast<std::size_t>(first + p.first), static_cast<std::size_t>(first + p.second)));
  return hinge_loss(triplets, cost, alpha).value;
}

}  // namespace kotml::learn
