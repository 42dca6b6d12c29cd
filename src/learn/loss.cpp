#include "kotml/learn/loss.hpp"

#include <string>

#include "kotml/core/error.hpp"
#include "kotml/dist/exact_sum.hpp"
#include "kotml/dist/partition.hpp"

namespace kotml::learn {

HingeLoss hinge_loss(const TripletSet& triplets, const std::vector<double>& pair_cost, double alpha,
                     const dist::Comm* comm) {
  if (pair_cost.size() != triplets.pairs.size())
    throw InternalError("triplet loss: one cost per pair expected");
  HingeLoss result;
  result.n_triplets = triplets.size();
  result.d_pair_cost.assign(pair_cost.size(), 0.0);
  if (result.n_triplets == 0) return result;
  const bool split = comm != nullptr && comm->size() > 1;
  const dist::Block mine = split ? dist::block_of(triplets.chunks(), comm->size(), comm->rank())
                                 : dist::Block{0, triplets.chunks()};
  // Per pair: active triplets where it is {i, j} less those where it is
  // {j, k} (the derivative needs only the difference), and the active count
  // last; integers, so their sums over ranks are exact.
  const std::size_t n_pairs = pair_cost.size();
  std::vector<std::int64_t> counts(n_pairs + 1, 0);
  std::int64_t* net = counts.data();
  dist::ExactSum total(1);
  for (std::int64_t c = mine.begin; c < mine.end; ++c) {
    double chunk_total = 0.0;
    std::int64_t active = 0;
    triplets.for_each_in_chunk(c, [&](std::int32_t p, std::int32_t q) {
      const double margin = pair_cost[static_cast<std::size_t>(p)] - pair_cost[static_cast<std::size_t>(q)] + alpha;
      if (margin > 0.0) {
        chunk_total += margin;
        ++active;
        ++net[p];
        --net[q];
      }
    });
    total.add(0, chunk_total);
    counts[n_pairs] += active;
  }
  if (split) comm->sum_in_place(counts.data(), counts.size());
  result.n_active = counts[n_pairs];
  const double scale = 1.0 / static_cast<double>(result.n_triplets);
  result.value = (split ? total.allreduce(*comm) : total.local_total())[0] * scale;
  for (std::size_t p = 0; p < n_pairs; ++p) result.d_pair_cost[p] = static_cast<double>(net[p]) * scale;
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
