#include "kotml/gw/quality.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kotml/core/error.hpp"
#include "kotml/core/phase_timers.hpp"

namespace kotml::gw {
namespace {

std::vector<double> average_ranks(const std::vector<double>& x) {
  std::vector<std::size_t> order(x.size());
  std::iota(order.begin(), order.end(), std::size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return x[a] < x[b]; });
  std::vector<double> rank(x.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && x[order[j + 1]] == x[order[i]]) ++j;
    const double r = 0.5 * static_cast<double>(i + j) + 1.0;
    for (std::size_t t = i; t <= j; ++t) rank[order[t]] = r;
    i = j + 1;
  }
  return rank;
}

}  // namespace

double spearman(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size() || x.size() < 2)
    throw Error("", "", "spearman needs two samples of the same size, at least 2");
  const auto rx = average_ranks(x), ry = average_ranks(y);
  const double n = static_cast<double>(x.size());
  const double mx = std::accumulate(rx.begin(), rx.end(), 0.0) / n;
  const double my = std::accumulate(ry.begin(), ry.end(), 0.0) / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (std::size_t i = 0; i < rx.size(); ++i) {
    sxy += (rx[i] - mx) * (ry[i] - my);
    sxx += (rx[i] - mx) * (rx[i] - mx);
    syy += (ry[i] - my) * (ry[i] - my);
  }
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : std::nan("");
}

double angle_correlation(const std::vector<double>& source_angle,
                         const std::vector<double>& target_angle,
                         const std::vector<std::int64_t>& match) {
  std::vector<double> matched(match.size());
  for (std::size_t i = 0; i < match.size(); ++i)
    matched[i] = target_angle.at(static_cast<std::size_t>(match[i]));
  return spearman(source_angle, matched);
}

double foscttm(const dist::Comm& comm, const Matrix<double>& plan, std::int64_t row_begin, std::int64_t n,
               const Matrix<double>& target) {
  const timers::Scope timed("foscttm");
  const auto rows = static_cast<std::int64_t>(plan.extent(0));
  const auto m = static_cast<std::int64_t>(target.extent(0));
  const auto d = static_cast<std::int64_t>(target.extent(1));
  comm.phase([&] {
    if (n != m)
      throw Error::option("paired", "FOSCTTM pairs source point i with target point i, but the clouds have " +
                                        std::to_string(n) + " and " + std::to_string(m) + " points");
    internal_check(rows == 0 || static_cast<std::int64_t>(plan.extent(1)) == m,
                   "foscttm: the plan's columns are not the target's points");
  });

  // Barycentric projections of this rank's source points; the smallest row mass.
  Matrix<double> projected("kotml::gw::foscttm_projected", rows, d);
  double least_mass = 0;
  Kokkos::parallel_reduce(
      "kotml::gw::foscttm_project", Kokkos::RangePolicy<ExecSpace>(0, rows),
      KOKKOS_LAMBDA(const std::int64_t r, double& least) {
        double mass = 0;
        for (std::int64_t j = 0; j < m; ++j) {
          const double t = plan(r, j);
          mass += t;
          for (std::int64_t c = 0; c < d; ++c) projected(r, c) += t * target(j, c);
        }
        for (std::int64_t c = 0; c < d; ++c) projected(r, c) /= mass;
        least = mass < least ? mass : least;
      },
      Kokkos::Min<double>(least_mass));
  comm.phase([&] {
    if (rows > 0 && !(least_mass > 0))
      throw Error::option("paired",
                          "a plan row carries no mass, so its source point has no barycentre (FOSCTTM needs every row)");
  });

  // Every squared distance once, so that the row and the column counts compare
  // the very same numbers.
  Matrix<double> distance(no_init("kotml::gw::foscttm_distance"), rows, m);
  Kokkos::parallel_for(
      "kotml::gw::foscttm_distances",
      Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>>({0, 0}, {rows, m}),
      KOKKOS_LAMBDA(const std::int64_t r, const std::int64_t j) {
        double sum = 0;
        for (std::int64_t c = 0; c < d; ++c) {
          const double diff = projected(r, c) - target(j, c);
          sum += diff * diff;
        }
        distance(r, j) = sum;
      });
  Vector<double> own_partner(no_init("kotml::gw::foscttm_own_partner"), rows);
  Kokkos::parallel_for(
      "kotml::gw::foscttm_own_partner", Kokkos::RangePolicy<ExecSpace>(0, rows),
      KOKKOS_LAMBDA(const std::int64_t r) { own_partner(r) = distance(r, row_begin + r); });
  const auto own_partner_h = Kokkos::create_mirror_view_and_copy(HostSpace(), own_partner);
  const std::vector<double> partner_h =
      comm.allgatherv(std::vector<double>(own_partner_h.data(), own_partner_h.data() + rows));
  Vector<double> partner(no_init("kotml::gw::foscttm_partner"), m);
  Kokkos::deep_copy(partner, Kokkos::View<const double*, HostSpace, Kokkos::MemoryUnmanaged>(partner_h.data(), m));

  std::int64_t closer_in_rows = 0, closer_in_columns = 0;
  const Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>> all_pairs({0, 0}, {rows, m});
  Kokkos::parallel_reduce(
      "kotml::gw::foscttm_count_rows", all_pairs,
      KOKKOS_LAMBDA(const std::int64_t r, const std::int64_t j, std::int64_t& closer) {
        closer += distance(r, j) < distance(r, row_begin + r) ? 1 : 0;
      },
      closer_in_rows);
  Kokkos::parallel_reduce(
      "kotml::gw::foscttm_count_columns", all_pairs,
      KOKKOS_LAMBDA(const std::int64_t r, const std::int64_t j, std::int64_t& closer) {
        closer += distance(r, j) < partner(j) ? 1 : 0;
      },
      closer_in_columns);
  const double pairs = static_cast<double>(n) * static_cast<double>(m);
  return 0.5 * (static_cast<double>(comm.sum(closer_in_rows)) + static_cast<double>(comm.sum(closer_in_columns))) /
         pairs;
}

}  // namespace kotml::gw
