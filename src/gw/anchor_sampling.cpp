#include "kotml/gw/anchor_sampling.hpp"

#include <algorithm>

#include "gw_kernels.hpp"
#include "kotml/core/simulation.hpp"

namespace kotml::gw {

namespace {

/// n Ts that every rank computes alike from the same row masses.
template <class T>
Kokkos::View<T*, MemSpace> alike_on_every_rank(const char* site, std::int64_t n, bool same_everywhere,
                                               std::vector<std::shared_ptr<void>>& keep) {
  auto memory = sim::folded<T>(site, static_cast<std::size_t>(n), same_everywhere);
  if (memory.memory) keep.push_back(memory.memory);
  return memory.view;
}

}  // namespace

template <class S>
AnchorSampler<S>::AnchorSampler(std::int64_t n, std::int64_t count, const dist::Comm& comm)
    : comm_(&comm),
      count_(count),
      rows_(no_init("kotml::gw::draw_row"), count),
      cols_(no_init("kotml::gw::draw_col"), count) {
  const bool everywhere = comm.spans_world();
  weights_ = alike_on_every_rank<double>("kotml::gw::row_weights", n, everywhere, shared_memory_);
  quantised_ = alike_on_every_rank<std::int64_t>("kotml::gw::quantised", n, everywhere, shared_memory_);
  cumulative_ = alike_on_every_rank<std::int64_t>("kotml::gw::cumulative", n, everywhere, shared_memory_);
}

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
  detail::fill_from_host(weights_, row_mass);
  detail::quantise_weights(weights_, top, quantised_);
  const std::int64_t quantised_total = uniform ? 0 : detail::inclusive_scan(quantised_, cumulative_);
  detail::draw_rows(cumulative_, quantised_total, seed, iteration, rows_);
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
