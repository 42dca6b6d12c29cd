#pragma once
// A cohort read in two steps: planned (metadata, on every rank) when made, then
// the points of the donors each rank needs loaded on demand, from the .h5ad or
// from the built-in simulated cohort the reader keeps. A rank holds only what
// its placement asks (learn::donors_to_hold, eval::distance_donors_to_hold),
// so its memory falls as ranks grow.

#include <memory>
#include <vector>

#include "kotml/core/types.hpp"
#include "kotml/data/cell_source.hpp"
#include "kotml/data/cohort.hpp"
#include "kotml/dist/comm.hpp"

namespace kotml::data {

class CohortReader {
 public:
  /// Collective: opens the file or simulates the built-in cohort, and plans
  /// the cohort. Bad input is a CollectiveError on every rank.
  CohortReader(const CohortOptions& options, const dist::Comm& comm);

  const Cohort& cohort() const { return cohort_; }
  /// The cohort, for a store that takes its points
  /// (stage::DonorStore::take_points); hold() reads them again when asked.
  Cohort& cohort_for_staging() { return cohort_; }

  /// Collective: afterwards this rank holds the points of exactly `which`
  /// (cohort indices): missing donors are read, the others released.
  void hold(const std::vector<GlobalId>& which);
  /// Collective: every donor on every rank.
  void hold_all();

 private:
  const dist::Comm& comm_;
  std::unique_ptr<CellSource> source_;
  Cohort cohort_;
};

}  // namespace kotml::data
