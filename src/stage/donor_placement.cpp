#include "kotml/stage/donor_placement.hpp"

#include <algorithm>
#include <string>

#include "kotml/core/error.hpp"

namespace kotml::stage {
namespace {

std::vector<std::int64_t> sizes_of(const std::vector<std::int64_t>& points, const std::vector<GlobalId>& donors) {
  std::vector<std::int64_t> sizes;
  for (auto u : donors) sizes.push_back(points[static_cast<std::size_t>(u)]);
  return sizes;
}

std::vector<std::int64_t> points_of(const data::Cohort& cohort) {
  std::vector<std::int64_t> points;
  for (const auto& donor : cohort.donors) points.push_back(donor.n_points);
  return points;
}

std::vector<std::int64_t> points_of(const DonorStore& store) {
  std::vector<std::int64_t> points;
  for (GlobalId u = 0; u < store.n_donors(); ++u) points.push_back(store.rows(u));
  return points;
}

}  // namespace

DonorPlacement::DonorPlacement(const std::vector<std::int64_t>& points, const std::vector<GlobalId>& donors,
                               bool with_self, int ranks)
    : donors_(donors), placement_(sizes_of(points, donors), ranks, with_self) {
  position_.assign(points.size(), -1);
  for (std::size_t i = 0; i < donors.size(); ++i) position_[static_cast<std::size_t>(donors[i])] = static_cast<std::int64_t>(i);
}

DonorPlacement::DonorPlacement(const data::Cohort& cohort, const std::vector<GlobalId>& donors, bool with_self,
                               int ranks)
    : DonorPlacement(points_of(cohort), donors, with_self, ranks) {}

DonorPlacement::DonorPlacement(const DonorStore& store, const std::vector<GlobalId>& donors, bool with_self,
                               int ranks)
    : DonorPlacement(points_of(store), donors, with_self, ranks) {}

std::vector<GlobalId> DonorPlacement::held_by(int rank) const {
  std::vector<GlobalId> held;
  for (auto i : placement_.held_by(rank)) held.push_back(donors_[static_cast<std::size_t>(i)]);
  std::sort(held.begin(), held.end());
  return held;
}

std::int64_t DonorPlacement::position(GlobalId a) const {
  const auto p = position_[static_cast<std::size_t>(a)];
  if (p < 0) throw InternalError("donor " + std::to_string(a) + " is not among the placed donors");
  return p;
}

}  // namespace kotml::stage
