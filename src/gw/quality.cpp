#include "kotml/gw/quality.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kotml/core/error.hpp"

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

}  // namespace kotml::gw
