// Rank-based label distance (see label_distance.hpp). Host bookkeeping: k_q·k_r
// pairs of lists of a few dozen to a few hundred genes.

#include "kotml/map/label_distance.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "kotml/core/error.hpp"

namespace kotml::map {
namespace {

/// pairOT's prepare_deg_res: sort by logFC descending (stable), drop repeated
/// genes keeping the first; the result's positions are the ranks.
std::vector<std::int64_t> ranked_genes(const MarkerList& list) {
  std::vector<std::size_t> order(list.size());
  std::iota(order.begin(), order.end(), std::size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const double x = list.log_fc[a], y = list.log_fc[b];
    if (std::isnan(x) || std::isnan(y)) return !std::isnan(x) && std::isnan(y);
    return x > y;
  });
  std::vector<std::int64_t> genes;
  std::unordered_set<std::int64_t> seen;
  for (const std::size_t r : order)
    if (seen.insert(list.gene[r]).second) genes.push_back(list.gene[r]);
  return genes;
}

}  // namespace

std::vector<double> rank_distance(const std::vector<MarkerList>& query, const std::vector<MarkerList>& reference,
                                  double missing_rank) {
  for (const auto* side : {&query, &reference})
    for (const auto& list : *side)
      require(list.log_fc.size() == list.gene.size(), "", "", "a marker list's genes and logFCs differ in length");
  const std::size_t kq = query.size(), kr = reference.size();
  std::vector<std::unordered_map<std::int64_t, double>> reference_rank(kr);
  for (std::size_t y = 0; y < kr; ++y) {
    const auto genes = ranked_genes(reference[y]);
    for (std::size_t r = 0; r < genes.size(); ++r) reference_rank[y].emplace(genes[r], static_cast<double>(r));
  }
  std::vector<double> d(kq * kr, missing_rank);
  for (std::size_t x = 0; x < kq; ++x) {
    const auto genes = ranked_genes(query[x]);
    if (genes.empty()) continue;  // d = missing_rank
    for (std::size_t y = 0; y < kr; ++y) {
      double sum = 0.0;
      for (std::size_t r = 0; r < genes.size(); ++r) {
        const auto it = reference_rank[y].find(genes[r]);
        const double other = it == reference_rank[y].end() ? missing_rank : it->second;
        sum += std::fabs(std::log1p(static_cast<double>(r)) - std::log1p(other));
      }
      d[x * kr + y] = sum / static_cast<double>(genes.size());
    }
  }
  return d;
}

double numpy_quantile(std::vector<double> values, double q) {
  if (values.empty()) throw Error("", "", "the quantile of an empty set of values");
  if (!(q >= 0.0 && q <= 1.0)) throw Error::option("q-norm", "must lie in [0, 1]");
  for (const double v : values)
    if (std::isnan(v)) return v;
  std::sort(values.begin(), values.end());
  const auto n = static_cast<std::int64_t>(values.size());
  // numpy's 'linear' method: virtual index (n - 1)·q; at or past the last index
  // both neighbours are the last value.
  const double virtual_index = static_cast<double>(n - 1) * q;
  std::int64_t previous = static_cast<std::int64_t>(std::floor(virtual_index));
  std::int64_t next = previous + 1;
  if (virtual_index >= static_cast<double>(n - 1)) previous = next = n - 1;
  const double gamma = virtual_index - std::floor(virtual_index);
  const double a = values[static_cast<std::size_t>(previous)], b = values[static_cast<std::size_t>(next)];
  // numpy's _lerp: from the nearer end.
  const double diff = b - a;
  return gamma >= 0.5 ? b - diff * (1.0 - gamma) : a + diff * gamma;
}

std::vector<double> normalise_label_distance(const std::vector<double>& d, double q_norm) {
  const double quantile = numpy_quantile(d, q_norm);
  if (!(quantile > 0.0) || !std::isfinite(quantile))
    throw Error("", "", "label distance: the q_norm quantile of the rank distances is " + std::to_string(quantile) +
                            " (pairOT would divide by it); use another q_norm or more marker genes");
  std::vector<double> out(d.size());
  for (std::size_t i = 0; i < d.size(); ++i) {
    const double v = d[i] / quantile;
    out[i] = v > 1.0 ? 1.0 : v;  // NaN stays NaN, as pandas' clip
  }
  return out;
}

std::vector<double> label_distance(const std::vector<MarkerList>& query, const std::vector<MarkerList>& reference,
                                   const LabelDistanceOptions& options) {
  return normalise_label_distance(rank_distance(query, reference, options.missing_rank), options.q_norm);
}

LabelDistanceResult label_distance_from_de(const DeResults& query_de, const DeResults& reference_de,
                                           const std::vector<std::uint8_t>& allowed,
                                           const LabelDistanceConfig& config) {
  LabelDistanceResult r;
  r.query_markers = select_markers(filter_de_results(query_de, config.thresholds, allowed), config.query);
  r.reference_markers = select_markers(filter_de_results(reference_de, config.thresholds, allowed), config.reference);
  r.distance = label_distance(r.query_markers, r.reference_markers, config.distance);
  return r;
}

}  // namespace kotml::map
