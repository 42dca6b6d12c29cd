#pragma once
// The anchor pairs of one sampled-GW iteration: M pairs (j, l) drawn from the
// plan T (row-distributed), each row j with probability proportional to its
// mass Σ_l T(j, l), then the column l from T(j, ·) — TorchGW's sample_pairs_gpu,
// but seeded and exact:
//  * weights are quantised to integers relative to the largest
//    (w ↦ floor(w / w_max · 2^40)), so cumulative sums are exact and every rank
//    finds the same rows by binary search;
//  * draw m of iteration t uses random::Stream(seed, Purpose::gw_sampling, t)
//    from position 16·m (rows) and 16·(M + m) (columns);
//  * columns are drawn by the rank holding the row and shared.
// The weights and their cumulative sums (n each) are the same on every rank,
// so a simulated run with folding keeps one copy for all ranks.
// A plan of total mass below 1e-9 gives uniform rows and columns, as in TorchGW.

#include <cstdint>
#include <vector>

#include "kotml/core/simulation.hpp"
#include "kotml/core/types.hpp"
#include "kotml/dist/comm.hpp"
#include "kotml/graph/csr_graph.hpp"

namespace kotml::gw {

struct AnchorPairs {
  std::vector<graph::NodeId> source;  ///< rows j_m
  std::vector<graph::NodeId> target;  ///< columns l_m
};

template <class S>
class AnchorSampler {
 public:
  /// n: rows of the whole plan; count: M.
  AnchorSampler(std::int64_t n, std::int64_t count, const dist::Comm& comm);

  /// Collective. plan: this rank's rows [first_row, first_row + rows);
  /// row_mass: Σ_l T(j, l) for every row j of the whole plan (same on all ranks).
  AnchorPairs draw(Matrix<const S> plan, std::int64_t first_row,
                   const std::vector<double>& row_mass, std::uint64_t seed, std::uint64_t iteration);

 private:
  const dist::Comm* comm_;
  std::int64_t count_;
  // Folded in a simulated run that folds, plain allocations otherwise.
  sim::Folded<double> weights_;
  sim::Folded<std::int64_t> quantised_, cumulative_;
  Kokkos::View<graph::NodeId*, MemSpace> rows_, cols_;
};

extern template class AnchorSampler<float>;
extern template class AnchorSampler<double>;

}  // namespace kotml::gw
