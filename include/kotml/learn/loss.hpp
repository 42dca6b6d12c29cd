#pragma once
// The triplet hinge loss of GGML: mean over triplets of relu(D_ij − D_jk + α),
// and its derivative with respect to each pair's OT cost, which the trainer
// multiplies into the per-pair gradients of the costs with respect to A.

#include <cstdint>
#include <vector>

#include "kotml/core/types.hpp"
#include "kotml/dist/comm.hpp"
#include "kotml/learn/triplets.hpp"

namespace kotml::learn {

struct HingeLoss {
  double value = 0.0;                // mean of relu(D_ij − D_jk + α)
  std::int64_t n_triplets = 0;
  std::int64_t n_active = 0;         // triplets inside the margin (positive hinge)
  std::vector<double> d_pair_cost;   // ∂value/∂D_p per pair p
};

/// pair_cost[p] is the OT cost of triplets.pairs[p] (every pair's, on every
/// rank). The hinge's derivative at exactly zero is taken as zero (as torch's
/// relu), so a batch whose triplets all meet the margin has a zero gradient.
/// The derivatives come from integer counts of active triplets; the value is
/// summed in triplet order within each chunk of the set, then exactly over
/// chunks. With `comm` (collective) the chunks are split over its ranks in
/// contiguous blocks and the counts and sums added over them: the triplets are
/// O(B³), the one part of a step that grows faster than its pairs. Either way
/// every rank count gives the same bits.
HingeLoss hinge_loss(const TripletSet& triplets, const std::vector<double>& pair_cost, double alpha,
                     const dist::Comm* comm = nullptr);

/// The hinge loss over all triplets of the donors [first, n) of a precomputed
/// n×n distance matrix with the given labels (per row): a held-out loss that
/// needs no further OT solve.
double hinge_loss_of_block(const HostMatrix<double>& distances, const std::vector<int>& labels,
                           std::int64_t first, double alpha);

}  // namespace kotml::learn
