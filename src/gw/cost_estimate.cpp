#include "kotml/gw/cost_estimate.hpp"

#include <algorithm>
#include <limits>

#include "gw_kernels.hpp"

namespace kotml::gw {
namespace {

/// TorchGW's fix and scale of one block, whose rows are spread over ranks: its
/// maximum and its infinities are counted over all of them.
template <class S>
void normalise(DistanceBlock raw, Matrix<S> out, const dist::Comm& comm) {
  double top = detail::block_max_finite(raw);
  std::int64_t infinite = detail::block_count_infinite(raw);
  std::int64_t entries = static_cast<std::int64_t>(raw.size());
  if (comm.size() > 1) {
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
CostEstimate<S>::CostEstimate(std::int64_t rows, std::int64_t k, std::int64_t m, const dist::Comm& comm)
    : dx_(no_init("kotml::gw::dx"), rows, m),
      dy_(no_init("kotml::gw::dy"), k, m),
      row_sq_(no_init("kotml::gw::row_sq"), rows),
      col_sq_(no_init("kotml::gw::col_sq"), k) {
  // On one rank the own block is the whole block: no second copy.
  if (comm.size() == 1) {
    dy_own_ = dy_;
    col_sq_own_ = col_sq_;
    return;
  }
  const dist::Block own = plan_rows(k, comm.size(), comm.rank());
  dy_own_ = Matrix<S>(no_init("kotml::gw::dy_own"), own.end - own.begin, m);
  col_sq_own_ = Vector<S>(no_init("kotml::gw::col_sq_own"), own.end - own.begin);
}

template <class S>
double CostEstimate<S>::build(DistanceBlock dx_raw, DistanceBlock dy_own_raw, Matrix<S> lambda,
                              const dist::Comm& comm) {
  normalise<S>(dx_raw, dx_, comm);
  normalise<S>(dy_own_raw, dy_own_, comm);
  detail::mean_squares<S>(dx_, row_sq_);
  detail::mean_squares<S>(dy_own_, col_sq_own_);
  if (comm.size() > 1) {
    allgather_rows(comm, dy_own_, dy_);
    allgather_rows(comm, col_sq_own_, col_sq_);
  }
  detail::cross_term<S>(dx_, dy_, lambda);
  const double local_max = detail::add_rank_one_terms<S>(lambda, row_sq_, col_sq_);
  return comm.size() > 1 ? comm.max(local_max) : local_max;
}

template class CostEstimate<float>;
template class CostEstimate<double>;

}  // namespace kotml::gw
