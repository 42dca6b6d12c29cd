#pragma once
// pairOT 0.1's cluster-to-cluster label distance (tl/_label_distance.py,
// _calc_rank_distance), from the marker lists of markers.hpp.
//
// Each list is ordered by logFC descending (stable; a repeated gene keeps its
// first place) and a gene's rank is its 0-based position. For query cluster q
// and reference cluster r:
//   d(q, r) = mean over the genes g of q's list of |log1p(rank_q(g)) − log1p(rank_r(g))|,
//   rank_r(g) = missing_rank (250) when g is not in r's list; d = missing_rank
//   when q's list is empty.
// Then Dlab = min(d / Q, 1), Q = numpy.quantile(d, q_norm = 0.33) over all
// k_q·k_r entries with numpy's default 'linear' method (virtual index
// (n − 1)·q into the sorted entries, numpy's two-sided lerp). Dlab ∈ [0, 1];
// entries at or above the quantile are exactly 1.
//
// pairOT's DatasetMap then casts Dlab to float32 before it enters the cost
// λ_f·½(1 − cos) + λ_l·Dlab[ℓ_i, ℓ_j]; label_distance returns double and leaves
// that cast to the caller.
//
// Layout: k_q × k_r row-major, clusters in category order. Gene ranks are looked
// up by gene index, so both sides' lists must index the same gene list.

#include <cstdint>
#include <vector>

#include "kotml/map/markers.hpp"

namespace kotml::map {

struct LabelDistanceOptions {
  double missing_rank = 250.0;
  double q_norm = 0.33;
};

/// The raw rank distance d (k_q × k_r).
std::vector<double> rank_distance(const std::vector<MarkerList>& query, const std::vector<MarkerList>& reference,
                                  double missing_rank = 250.0);

/// numpy.quantile(values, q) with the default 'linear' method; NaN when any
/// value is NaN, as numpy. Error when values is empty or q is outside [0, 1].
double numpy_quantile(std::vector<double> values, double q);

/// min(d / quantile(d, q_norm), 1) (NaN entries stay NaN). Error when the quantile
/// is 0 or not finite: pairOT would divide by it and put inf/NaN into the cost.
std::vector<double> normalise_label_distance(const std::vector<double>& d, double q_norm = 0.33);

/// rank_distance then normalise_label_distance.
std::vector<double> label_distance(const std::vector<MarkerList>& query, const std::vector<MarkerList>& reference,
                                   const LabelDistanceOptions& options = {});

/// The whole chain of DatasetMap.init_geom from DE tables: filter both sides
/// (thresholds, allowed as filter_de_results), select markers (query: 10 OVA + 3
/// AVA, reference: all), label_distance.
struct LabelDistanceConfig {
  MarkerThresholds thresholds;
  SelectOptions query = SelectOptions::query();
  SelectOptions reference = SelectOptions::reference();
  LabelDistanceOptions distance;
};

struct LabelDistanceResult {
  std::vector<MarkerList> query_markers, reference_markers;
  std::vector<double> distance;  // Dlab, k_q × k_r
};

LabelDistanceResult label_distance_from_de(const DeResults& query_de, const DeResults& reference_de,
                                           const std::vector<std::uint8_t>& allowed = {},
                                           const LabelDistanceConfig& config = {});

}  // namespace kotml::map
