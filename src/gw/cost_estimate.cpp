#include "kotml/gw/cost_estimate.hpp"

#include <algorithm>
#include <array>
#include <limits>

#include "gw_kernels.hpp"

namespace kotml::gw {
namespace {

/// What TorchGW's fix and scale of one block needs from the whole block,
/// whose rows are spread over ranks: its largest finite entry, and whether it
/// has infinite and finite entries. All are maxima (flags as 0 or 1), so both
/// blocks take one collective of six values (block_scales).
struct BlockScale {
  double top;           // the largest finite entry; the lowest double when none
  double any_infinite;  // 1 when an entry is +inf
  double any_finite;    // 1 when an entry is finite
};

BlockScale local_scale(DistanceBlock raw) {
  const std::int64_t infinite = detail::block_count_infinite(raw);
  const auto entries = static_cast<std::int64_t>(raw.size());
  return {detail::block_max_finite(raw), infinite > 0 ? 1.0 : 0.0, infinite < entries ? 1.0 : 0.0};
}

/// Both blocks' scales over all ranks, in one allreduce.
std::array<BlockScale, 2> block_scales(DistanceBlock dx_raw, DistanceBlock dy_raw, const dist::Comm& comm) {
  std::array<BlockScale, 2> scales{local_scale(dx_raw), local_scale(dy_raw)};
  if (comm.size() == 1) return scales;
  double packed[6];
  for (std::size_t b = 0; b < 2; ++b) {
    packed[3 * b] = scales[b].top;
    packed[3 * b + 1] = scales[b].any_infinite;
    packed[3 * b + 2] = scales[b].any_finite;
  }
  comm.max_in_place(packed, 6);
  for (std::size_t b = 0; b < 2; ++b) scales[b] = {packed[3 * b], packed[3 * b + 1], packed[3 * b + 2]};
  return scales;
}

/// +inf entries become 1.5 × the largest finite one (1 when there is none),
/// then the block is divided by its largest entry.
template <class S>
void normalise(DistanceBlock raw, const BlockScale& scale, Matrix<S> out) {
  const bool any_finite = scale.any_finite > 0;
  float fill = 0.0f;
  float divisor = any_finite ? static_cast<float>(scale.top) : 0.0f;
  if (scale.any_infinite > 0) {
    fill = any_finite ? static_cast<float>(scale.top) * 1.5f : 1.0f;
    divisor = std::max(fill, divisor);
  }
  detail::normalise_block<S>(raw, fill, divisor > 0.0f ? divisor : 0.0f, out);
}

/// (1/M)·‖d_x − d_y‖² = (1/M)·(‖d_x‖² + ‖d_y‖² − 2·d_x·d_y): ot's sqeuclidean
/// (OTT's form, norms plus a cross term) with feature weight 1/M.
ot::PointCost squared_difference_mean(std::int64_t m) {
  ot::PointCost cost;
  cost.kind = ot::Cost::sqeuclidean;
  cost.feature_weight = 1.0 / static_cast<double>(m);
  return cost;
}

}  // namespace

template <class S>
CostEstimate<S>::CostEstimate(std::int64_t rows, std::int64_t k, std::int64_t m, const dist::Comm& comm)
    : dx_(no_init("kotml::gw::dx"), rows, m),
      row_norm_(no_init("kotml::gw::row_norm"), rows),
      dy_memory_(sim::folded<S>("kotml::gw::dy", static_cast<std::size_t>(k * m), comm.spans_world())),
      col_norm_memory_(sim::folded<S>("kotml::gw::col_norm", static_cast<std::size_t>(k), comm.spans_world())),
      costs_(squared_difference_mean(m), k, static_cast<int>(m), comm.size() > 1 && comm.spans_world()) {
  dy_ = Matrix<S>(dy_memory_.view.data(), k, m);
  col_norm_ = col_norm_memory_.view;
  // On one rank the own block is the whole block: no second copy.
  if (comm.size() == 1) {
    dy_own_ = dy_;
    col_norm_own_ = col_norm_;
    return;
  }
  const dist::Block own = plan_rows(k, comm.size(), comm.rank());
  own_begin_ = own.begin;
  dy_own_ = Matrix<S>(no_init("kotml::gw::dy_own"), own.end - own.begin, m);
  col_norm_own_ = Vector<S>(no_init("kotml::gw::col_norm_own"), own.end - own.begin);
}

template <class S>
double CostEstimate<S>::build(DistanceBlock dx_raw, DistanceBlock dy_own_raw, Matrix<S> lambda,
                              const dist::Comm& comm) {
  const auto scales = block_scales(dx_raw, dy_own_raw, comm);
  normalise<S>(dx_raw, scales[0], dx_);
  normalise<S>(dy_own_raw, scales[1], dy_own_);
  ot::cost_norms<S>(ot::Cost::sqeuclidean, dx_, row_norm_);
  ot::cost_norms<S>(ot::Cost::sqeuclidean, dy_own_, col_norm_own_);
  if (comm.size() > 1) {
    const auto first = static_cast<std::size_t>(own_begin_);
    sim::write_own_block(dy_memory_, dy_own_.data(), dy_own_.span(), first * dy_.extent(1));
    sim::write_own_block(col_norm_memory_, col_norm_own_.data(), col_norm_own_.span(), first);
    allgather_rows(comm, dy_own_, dy_);
    allgather_rows(comm, col_norm_own_, col_norm_);
  }
  const double local_max = costs_.compute(dx_, row_norm_, dy_, col_norm_, lambda);
  return comm.size() > 1 ? comm.max(local_max) : local_max;
}

template class CostEstimate<float>;
template class CostEstimate<double>;

}  // namespace kotml::gw
