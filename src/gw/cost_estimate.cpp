#include "kotml/gw/cost_estimate.hpp"

#include <algorithm>
#include <limits>

#include "gw_kernels.hpp"

namespace kotml::gw {
namespace {

/// TorchGW's fix and scale of one block; `distributed`: the block's rows are
/// spread over ranks, so its maximum and its infinities are counted over all.
template <class S>
void normalise(DistanceBlock raw, Matrix<S> out, bool distributed, const dist::Comm& comm) {
  double top = detail::block_max_finite(raw);
  std::int64_t infinite = detail::block_count_infinite(raw);
  std::int64_t entries = static_cast<std::int64_t>(raw.size());
  if (distributed && comm.size() > 1) {
    top = comm.max(top);
    infinite = comm.sum(infinite);
    entries = comm.sum(entries);
  }
  // A reduction's identity is the lowest double, not -inf: decide by counts.
  const bool any_finite = infinite < entries;
  float fill = 0.0f;
  float divisor = any_finite ? static_cast<float>(top) : 0.0f;
  if (infinite > 0) {
    fill = any_finite ? static_cast<float>(top) * 1.5f : 1.0f;
    divisor = std::max(fill, divisor);
  }
  detail::normalise_block<S>(raw, fill, divisor > 0.0f ? divisor : 0.0f, out);
}

}  // namespace

template <class S>
CostEstimate<S>::CostEstimate(std::int64_t rows, std::int64_t k, std::int64_t m)
    : dx_(no_init("kotml::gw::dx"), rows, m),
      dy_(no_init("kotml::gw::dy"), k, m),
      row_sq_(no_init("kotml::gw::row_sq"), rows),
      col_sq_(no_init("kotml::gw::col_sq"), k) {}

template <class S>
double CostEstimate<S>::build(DistanceBlock dx_raw, DistanceBlock dy_raw, Matrix<S> lambda,
                              const dist::Comm& comm) {
  normalise<S>(dx_raw, dx_, true, comm);
  normalise<S>(dy_raw, dy_, false, comm);
  detail::mean_squares<S>(dx_, row_sq_);
  detail::mean_squares<S>(dy_, col_sq_);
  detail::cross_term<S>(dx_, dy_, lambda);
  const double local_max = detail::add_rank_one_terms<S>(lambda, row_sq_, col_sq_);
  return comm.size() > 1 ? comm.max(local_max) : local_max;
}

template class CostEstimate<float>;
template class CostEstimate<double>;

}  // namespace kotml::gw
