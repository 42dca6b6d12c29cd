#pragma once
// The donor × donor OT distance matrix, with the unordered pairs spread over MPI
// ranks by the 2-D block placement of dist::PairPlacement (balanced by their
// cost n·m; a rank needs only the donors of its pairs) and gathered on every
// rank. Each entry is
// computed by exactly one rank from the pair alone, so the matrix is the same
// bits for any rank count. As GGML-OT's compute_OT: symmetric, zero diagonal,
// clamped at zero.

#include <string>
#include <vector>

#include "kotml/core/types.hpp"
#include "kotml/data/cohort.hpp"
#include "kotml/dist/comm.hpp"
#include "kotml/eval/pair_ot.hpp"

namespace kotml::eval {

/// Collective. donors: cohort indices (rows/columns of the result, in this
/// order); every rank's store must hold the points of distance_donors_to_hold
/// (an internal error otherwise). Solver warnings are gathered and printed on rank 0.
HostMatrix<double> distance_matrix(const stage::DonorStore& store, const GroundMetric& metric,
                                   const stage::OtSettings& settings, const std::vector<GlobalId>& donors,
                                   const dist::Comm& comm);

/// The donors (cohort indices, increasing) rank `rank` of `n_ranks` needs for
/// distance_matrix over `donors`: those of the pairs it owns.
std::vector<GlobalId> distance_donors_to_hold(const data::Cohort& cohort, const std::vector<GlobalId>& donors,
                                              int n_ranks, int rank);

}  // namespace kotml::eval
