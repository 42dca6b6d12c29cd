#pragma once
// The sampled GW cost estimate of one iteration (TorchGW's _gw_loop, step 2–3):
// from the distances of this rank's source rows to the M source anchors (D_X)
// and of this rank's target rows to the M target anchors (D_Y; rows split as
// the plan's, `plan_rows(K)`),
//   * +inf entries become 1.5 × the largest finite entry of their block (1.0
//     when the block has none), then each block is divided by its maximum —
//     in float32, as TorchGW does; both blocks' numbers are taken over all
//     ranks;
//   * each rank normalises only its own target rows and their squared norms,
//     then gathers both: every rank needs all of D_Y for its Λ rows, but the
//     per-entry work on D_Y (K × M every iteration) is then split, not repeated;
//     the gathered D_Y (K × M) and its norms are the same on every rank, so a
//     simulated run with folding keeps one copy for all ranks
//     (core/simulation.hpp; 26 MB a rank in float at K = 32,768, M = 200);
//   * Λ(i, k) = (1/M) Σ_m (D_X(i, m) − D_Y(k, m))²
//            = (1/M)·(‖D_X(i, ·)‖² + ‖D_Y(k, ·)‖² − 2 Σ_m D_X(i, m) D_Y(k, m)),
//     TorchGW's mean squares and cross term with the 1/M taken out, computed
//     tile by tile by ot's point costs (ot::PointCostMatrix): each entry is a
//     fixed sequence of operations on its own two rows, so Λ has the same bits
//     however the rows are split over ranks. (A GEMM per row tile had that
//     only for a fixed tile height, and re-packed D_Y at every call.)

#include <cstdint>

#include "kotml/core/simulation.hpp"
#include "kotml/core/types.hpp"
#include "kotml/dist/comm.hpp"
#include "kotml/gw/distances.hpp"
#include "kotml/gw/row_partition.hpp"
#include "kotml/ot/point_cost.hpp"

namespace kotml::gw {

template <class S>
class CostEstimate {
 public:
  /// rows: this rank's source rows; k: target points; m: anchors per iteration.
  /// The rank's target rows are plan_rows(k, comm.size(), comm.rank()).
  CostEstimate(std::int64_t rows, std::int64_t k, std::int64_t m, const dist::Comm& comm);

  /// Collective. dx_raw: this rank's source rows × M; dy_own_raw: this rank's
  /// target rows × M. Fills lambda (rows × K) and returns max Λ over all ranks
  /// (-inf if no rank has rows).
  double build(DistanceBlock dx_raw, DistanceBlock dy_own_raw, Matrix<S> lambda, const dist::Comm& comm);

 private:
  Matrix<S> dx_, dy_own_, dy_;
  Vector<S> row_norm_, col_norm_own_, col_norm_;  // ‖·‖² of the normalised rows
  // The memory of dy_ and col_norm_: folded in a simulated run that folds (each
  // rank then writes its own rows there itself), a plain allocation otherwise.
  sim::Folded<S> dy_memory_, col_norm_memory_;
  ot::PointCostMatrix<S> costs_;
  std::int64_t own_begin_ = 0;  // this rank's first target row
};

extern template class CostEstimate<float>;
extern template class CostEstimate<double>;

}  // namespace kotml::gw
