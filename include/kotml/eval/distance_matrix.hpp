#pragma once
// The donor × donor OT distance matrix, with the unordered pairs spread over MPI
// ranks (balanced by their cost n·m) and gathered on every rank. Each entry is
// computed by exactly one rank from the pair alone, so the matrix is the same
// bits for any rank count. As GGML-OT's compute_OT: symmetric, zero diagonal,
// clamped at zero.

#include <string>
#include <vector>

#include "kotml/core/types.hpp"
#include "kotml/dist/comm.hpp"
#include "kotml/eval/pair_ot.hpp"

namespace kotml::eval {

/// Collective. donors: cohort indices (rows/columns of the result, in this
/// order); every rank's store must hold the points of the donors it is assigned
/// (simplest: all of them). Solver warnings are gathered and printed on rank 0.
HostMatrix<double> distance_matrix(const DonorStore& store, const GroundMetric& metric,
                                   const OtSettings& settings, const std::vector<GlobalId>& donors,
                                   const dist::Comm& comm);

/// The rank that computes each unordered pair (i < j, row-major over the
/// donors' positions) under balance_by_cost with cost rows_i · rows_j.
std::vector<int> pair_owners(const DonorStore& store, const std::vector<GlobalId>& donors, int n_ranks);

}  // namespace kotml::eval
