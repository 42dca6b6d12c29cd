#pragma once
// The sampled GW cost estimate of one iteration (TorchGW's _gw_loop, step 2–3):
// from the distances of this rank's source rows to the M source anchors (D_X)
// and of every target point to the M target anchors (D_Y),
//   * +inf entries become 1.5 × the largest finite entry of their block (1.0
//     when the block has none), then each block is divided by its maximum —
//     in float32, as TorchGW does; the source block's numbers are taken over
//     all ranks;
//   * Λ(i, k) = mean_m D_X(i, m)² + mean_m D_Y(k, m)² − (2/M) Σ_m D_X(i, m) D_Y(k, m)
//            = (1/M) Σ_m (D_X(i, m) − D_Y(k, m))²,
// the cross term by one GEMM per global row tile (the same calls on any rank count).

#include <cstdint>

#include "kotml/core/types.hpp"
#include "kotml/dist/comm.hpp"
#include "kotml/gw/distances.hpp"

namespace kotml::gw {

template <class S>
class CostEstimate {
 public:
  /// rows: this rank's source rows; k: target points; m: anchors per iteration.
  CostEstimate(std::int64_t rows, std::int64_t k, std::int64_t m);

  /// Collective. Fills lambda (rows × K) and returns max Λ over all ranks
  /// (-inf if no rank has rows).
  double build(DistanceBlock dx_raw, DistanceBlock dy_raw, Matrix<S> lambda, const dist::Comm& comm);

 private:
  Matrix<S> dx_, dy_;
  Vector<S> row_sq_, col_sq_;
};

extern template class CostEstimate<float>;
extern template class CostEstimate<double>;

}  // namespace kotml::gw
