#pragma once
// The 2-D block placement of dist::PairPlacement over a list of cohort donors,
// addressed by cohort index: which rank solves a donor pair, which rank maps a
// donor's per-donor work (its home), and which donors a rank must hold. One
// placement serves training (with self pairs under Sinkhorn) and the distance
// matrices (without); the donors' points weigh the balance.

#include <cstdint>
#include <vector>

#include "kotml/core/types.hpp"
#include "kotml/data/cohort.hpp"
#include "kotml/dist/pair_placement.hpp"
#include "kotml/stage/donor_store.hpp"

namespace kotml::stage {

class DonorPlacement {
 public:
  /// points[u]: points of cohort donor u; donors: the placed donors, whose
  /// order fixes the placement; with_self: the pairs {u, u} are placed too.
  DonorPlacement(const std::vector<std::int64_t>& points, const std::vector<GlobalId>& donors, bool with_self,
                 int ranks);
  /// The same, the points read from the cohort's metadata (every rank knows
  /// them before any donor is loaded) or from a store.
  DonorPlacement(const data::Cohort& cohort, const std::vector<GlobalId>& donors, bool with_self, int ranks);
  DonorPlacement(const DonorStore& store, const std::vector<GlobalId>& donors, bool with_self, int ranks);

  int owner(GlobalId a, GlobalId b) const { return placement_.owner(position(a), position(b)); }
  int home(GlobalId a) const { return placement_.home(position(a)); }
  /// The donors (cohort indices) `rank` holds, increasing.
  std::vector<GlobalId> held_by(int rank) const;

 private:
  std::int64_t position(GlobalId a) const;
  std::vector<GlobalId> donors_;
  dist::PairPlacement placement_;
  std::vector<std::int64_t> position_;  // per cohort donor; -1 when not placed
};

}  // namespace kotml::stage
