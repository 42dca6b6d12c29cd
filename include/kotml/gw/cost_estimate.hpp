#pragma once
// The sampled GW cost estimate of one iteration (TorchGW's _gw_loop, step 2–3):
// from the distances of this rank's source rows to the M source anchors (D_X)
// and of this rank's target rows to the M target anchors (D_Y; rows split as
// the plan's, `plan_rows(K)`),
//   * +inf entries become 1.5 × the largest finite entry of their block (1.0
//     when the block has none), then each block is divided by its maximum —
//     in float32, as TorchGW does; both blocks' numbers are taken over all
//     ranks;
//   * each rank normalises only its own target rows and their mean squares,
//     then gathers both: every rank needs all of D_Y for its Λ rows, but the
//     per-entry work on D_Y (K × M every iteration) is then split, not repeated;
//     the gathered D_Y (K × M) and its mean squares are the same on every rank,
//     so a simulated run with folding keeps one copy for all ranks
//     (core/simulation.hpp; 26 MB a rank in float at K = 32,768, M = 200);
//   * Λ(i, k) = mean_m D_X(i, m)² + mean_m D_Y(k, m)² − (2/M) Σ_m D_X(i, m) D_Y(k, m)
//            = (1/M) Σ_m (D_X(i, m) − D_Y(k, m))²,
// the cross term by one GEMM per global row tile (the same calls on any rank count).

#include <cstdint>

#include "kotml/core/simulation.hpp"
#include "kotml/core/types.hpp"
#include "kotml/dist/comm.hpp"
#include "kotml/gw/distances.hpp"
#include "kotml/gw/row_partition.hpp"

namespace kotml::gw {

template <class S>
class CostEstimate {
 public:
  /// n: source points, of which this rank holds `rows` (plan_rows(n)); k:
  /// target points; m: anchors per iteration. The rank's target rows are
  /// plan_rows(k, comm.size(), comm.rank()).
  CostEstimate(std::int64_t n, std::int64_t rows, std::int64_t k, std::int64_t m, const dist::Comm& comm);

  /// Collective. dx_raw: this rank's source rows × M; dy_own_raw: this rank's
  /// target rows × M. Fills lambda (rows × K) and returns max Λ over all ranks
  /// (-inf if no rank has rows).
  double build(DistanceBlock dx_raw, DistanceBlock dy_own_raw, Matrix<S> lambda, const dist::Comm& comm);

 private:
  Matrix<S> dx_, dy_own_, dy_;
  Vector<S> row_sq_, col_sq_own_, col_sq_;
  // The memory of dy_ and col_sq_: folded in a simulated run that folds (each
  // rank then writes its own rows there itself), a plain allocation otherwise.
  sim::Folded<S> dy_memory_, col_sq_memory_;
  std::int64_t own_begin_ = 0;  // this rank's first target row
  std::int64_t tile_rows_;      // plan_row_tile(n): the cross term's GEMM tiles
};

extern template class CostEstimate<float>;
extern template class CostEstimate<double>;

}  // namespace kotml::gw
