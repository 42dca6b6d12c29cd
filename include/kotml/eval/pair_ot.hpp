#pragma once
// OT between donors under a ground metric: the learned ||A x − A y|| (or its
// square), or a fixed Euclidean or cosine cost on the raw features, for the
// evaluation's distance matrices. The staging, projection and solver settings
// it shares with training are in stage/.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kotml/core/types.hpp"
#include "kotml/data/cohort.hpp"
#include "kotml/stage/donor_store.hpp"
#include "kotml/stage/ot_settings.hpp"
#include "kotml/stage/projection.hpp"
#include "kotml/ot/batch.hpp"
#include "kotml/ot/cost.hpp"

namespace kotml::eval {

struct GroundMetric {
  enum class Kind { learned, euclidean, cosine };
  Kind kind = Kind::learned;
  bool squared = false;   // learned only: ||A(x − y)||² instead of ||A(x − y)||
  HostMatrix<double> a;   // learned only: k×d

  /// Cost between projected points (learned) or raw features (fixed metrics).
  ot::Cost cost() const;
  std::string name() const;  // "learned", "learned (squared)", "euclidean", "cosine"
};

/// "learned", "euclidean" or "cosine"; Error naming --metric otherwise.
GroundMetric::Kind parse_metric_kind(const std::string& text);

/// OT cost of each listed pair of cohort donors, solved on this rank (pairs in
/// chunks that fit the workspace), in the order given. EMD: the exact cost.
/// Sinkhorn: <P, C> with ε relative to each pair's own mean cost (GGML-OT's
/// evaluation: POT's sinkhorn2 on M / mean(M)), scaled back to cost units.
std::vector<double> pair_costs(const stage::DonorStore& store, const GroundMetric& metric,
                               const stage::OtSettings& settings,
                               const std::vector<std::pair<GlobalId, GlobalId>>& pairs,
                               stage::SolveReport& report);

}  // namespace kotml::eval
