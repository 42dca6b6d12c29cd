#include "kotml/eval/distance_matrix.hpp"

#include <algorithm>

#include "kotml/core/error.hpp"
#include "kotml/dist/pair_placement.hpp"

namespace kotml::eval {

namespace {

dist::PairPlacement placement_of(const std::vector<std::int64_t>& rows_by_donor, const std::vector<GlobalId>& donors,
                                 int n_ranks) {
  std::vector<std::int64_t> sizes;
  for (auto u : donors) sizes.push_back(rows_by_donor[static_cast<std::size_t>(u)]);
  return dist::PairPlacement(sizes, n_ranks, false);
}

}  // namespace

std::vector<GlobalId> distance_donors_to_hold(const data::Cohort& cohort, const std::vector<GlobalId>& donors,
                                              int n_ranks, int rank) {
  if (cohort.identical_supports) {
    std::vector<GlobalId> all(donors);
    std::sort(all.begin(), all.end());
    return all;
  }
  std::vector<std::int64_t> rows;
  for (const auto& donor : cohort.donors) rows.push_back(donor.n_points);
  std::vector<GlobalId> held;
  for (auto i : placement_of(rows, donors, n_ranks).held_by(rank)) held.push_back(donors[static_cast<std::size_t>(i)]);
  std::sort(held.begin(), held.end());
  return held;
}

HostMatrix<double> distance_matrix(const stage::DonorStore& store, const GroundMetric& metric,
                                   const stage::OtSettings& settings, const std::vector<GlobalId>& donors,
                                   const dist::Comm& comm) {
  const std::size_t n = donors.size();
  std::vector<std::int64_t> rows;
  for (GlobalId u = 0; u < store.n_donors(); ++u) rows.push_back(store.rows(u));
  const auto placement = placement_of(rows, donors, comm.size());
  std::vector<std::pair<GlobalId, GlobalId>> mine;
  std::vector<std::int64_t> mine_ids;
  std::size_t id = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j, ++id)
      if (placement.owner(static_cast<std::int64_t>(i), static_cast<std::int64_t>(j)) == comm.rank()) {
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
