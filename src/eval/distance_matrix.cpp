#include "kotml/eval/distance_matrix.hpp"

#include <algorithm>

#include "kotml/core/error.hpp"
#include "kotml/stage/donor_placement.hpp"

namespace kotml::eval {

std::vector<GlobalId> distance_donors_to_hold(const data::Cohort& cohort, const std::vector<GlobalId>& donors,
                                              int n_ranks, int rank) {
  if (cohort.identical_supports) {
    std::vector<GlobalId> all(donors);
    std::sort(all.begin(), all.end());
    return all;
  }
  return stage::DonorPlacement(cohort, donors, false, n_ranks).held_by(rank);
}

HostMatrix<double> distance_matrix(const stage::DonorStore& store, const GroundMetric& metric,
                                   const stage::OtSettings& settings, const std::vector<GlobalId>& donors,
                                   const dist::Comm& comm) {
  const std::size_t n = donors.size();
  const stage::DonorPlacement placement(store, donors, false, comm.size());
  std::vector<std::pair<GlobalId, GlobalId>> mine;
  std::vector<std::int64_t> mine_ids;
  std::size_t id = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j, ++id)
      if (placement.owner(donors[i], donors[j]) == comm.rank()) {
        if (!store.has(donors[i]) || !store.has(donors[j]))
          throw InternalError("distances: a donor of pair (" + std::to_string(donors[i]) + ", " +
                              std::to_string(donors[j]) + ") is not loaded on rank " + std::to_string(comm.rank()));
        mine.emplace_back(donors[i], donors[j]);
        mine_ids.push_back(static_cast<std::int64_t>(id));
      }
  std::vector<double> costs;
  stage::SolveReport report;
  comm.phase([&] { costs = pair_costs(store, metric, settings, mine, report); });
  comm.gather_warnings(report.warnings("distances (" + metric.name() + ")"));
  const auto all_ids = comm.allgatherv(mine_ids);
  const auto all_costs = comm.allgatherv(costs);
  // Row and column of each pair id, row-major over the upper triangle.
  std::vector<std::pair<std::size_t, std::size_t>> where;
  where.reserve(n * (n > 0 ? n - 1 : 0) / 2);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j) where.emplace_back(i, j);
  HostMatrix<double> d("kotml::eval::distance_matrix", n, n);
  for (std::size_t t = 0; t < all_ids.size(); ++t) {
    const auto [i, j] = where[static_cast<std::size_t>(all_ids[t])];
    const double value = std::max(0.0, all_costs[t]);
    d(i, j) = value;
    d(j, i) = value;
  }
  return d;
}

}  // namespace kotml::eval
