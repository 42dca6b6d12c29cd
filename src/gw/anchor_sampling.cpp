#include "kotml/gw/anchor_sampling.hpp"

#include <algorithm>

#include "gw_kernels.hpp"

namespace kotml::gw {

template <class S>
AnchorSampler<S>::AnchorSampler(std::int64_t n, std::int64_t count, const dist::Comm& comm)
    : comm_(&comm),
      count_(count),
      weights_(sim::folded<double>("kotml::gw::row_weights", static_cast<std::size_t>(n), comm.spans_world())),
      quantised_(sim::folded<std::int64_t>("kotml::gw::quantised", static_cast<std::size_t>(n), comm.spans_world())),
      cumulative_(sim::folded<std::int64_t>("kotml::gw::cumulative", static_cast<std::size_t>(n), comm.spans_world())),
      rows_(no_init("kotml::gw::draw_row"), count),
      cols_(no_init("kotml::gw::draw_col"), count) {}

template <class S>
AnchorPairs AnchorSampler<S>::draw(Matrix<const S> plan, std::int64_t first_row,
                                   const std::vector<double>& row_mass, std::uint64_t seed,
                                   std::uint64_t iteration) {
  double total = 0, top = 0;
  for (double w : row_mass) {
    total += w;
    top = std::max(top, w);
  }
  const bool uniform = !(total >= 1e-9);
  detail::fill_from_host(weights_.view, row_mass);
  detail::quantise_weights(weights_.view, top, quantised_.view);
  const std::int64_t quantised_total = uniform ? 0 : detail::inclusive_scan(quantised_.view, cumulative_.view);
  detail::draw_rows(cumulative_.view, quantised_total, seed, iteration, rows_);
  detail::draw_columns<S>(plan, first_row, rows_, seed, iteration, uniform, cols_);

  auto rows_h = Kokkos::create_mirror_view_and_copy(HostSpace(), rows_);
  auto cols_h = Kokkos::create_mirror_view_and_copy(HostSpace(), cols_);
  AnchorPairs pairs;
  pairs.source.assign(rows_h.data(), rows_h.data() + count_);
  pairs.target.assign(cols_h.data(), cols_h.data() + count_);
  if (comm_->size() > 1) {
    std::vector<std::int64_t> mine;  // (draw, column) for the rows this rank holds
    for (std::int64_t m = 0; m < count_; ++m)
      if (pairs.target[static_cast<std::size_t>(m)] >= 0) {
        mine.push_back(m);
        mine.push_back(pairs.target[static_cast<std::size_t>(m)]);
      }
    const auto all = comm_->allgatherv(mine);
    for (std::size_t e = 0; e + 1 < all.size(); e += 2)
      pairs.target[static_cast<std::size_t>(all[e])] = static_cast<graph::NodeId>(all[e + 1]);
  }
  return pairs;
}

template class AnchorSampler<float>;
template class AnchorSampler<double>;

}  // namespace kotml::gw
