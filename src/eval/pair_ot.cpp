#include "kotml/eval/pair_ot.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <map>

#include "kotml/core/error.hpp"
#include "kotml/core/math.hpp"
#include "kotml/ot/network_simplex.hpp"
#include "kotml/ot/sinkhorn.hpp"

namespace kotml::eval {
namespace {

/// Pairs solved together: bounded so that a GPU stage holds only their donors.
constexpr std::size_t pairs_per_chunk = 4096;

template <class T>
std::vector<double> solve_chunk(const ot::CloudBatch<T>& clouds, const std::vector<ot::Pair>& pairs,
                                ot::Cost cost, const stage::OtSettings& settings, stage::SolveReport& report) {
  std::vector<double> costs(pairs.size());
  if (settings.exact()) {
    ot::EmdOptions options;
    options.max_iter = settings.emd_max_iter;
    options.workspace_bytes = settings.workspace_bytes;
    const auto result = ot::emd(clouds, pairs, cost, options);
    const auto summaries = result.summaries();
    for (std::size_t u = 0; u < pairs.size(); ++u) {
      costs[u] = summaries[u].cost;
      report.count(summaries[u].status);
    }
    return costs;
  }
  // GGML-OT's evaluation normalises each pair's cost by its own mean: one
  // problem per solve, ε relative to that problem alone.
  ot::SinkhornOptions options;
  options.epsilon = settings.entropic_reg;
  options.relative_epsilon = true;
  options.max_iter = settings.sinkhorn_max_iter;
  options.tol = settings.sinkhorn_tol;
  options.domain = settings.sinkhorn_domain;
  options.workspace_bytes = settings.workspace_bytes;
  for (std::size_t u = 0; u < pairs.size(); ++u) {
    const auto result = ot::sinkhorn(clouds, std::vector<ot::Pair>{pairs[u]}, cost, options);
    const auto summary = result.summary(0);
    costs[u] = summary.cost;
    report.count(summary.status);
  }
  return costs;
}

}  // namespace

ot::Cost GroundMetric::cost() const {
  switch (kind) {
    case Kind::learned:
      return squared ? ot::Cost::sqeuclidean : ot::Cost::euclidean;
    case Kind::euclidean:
      return ot::Cost::euclidean;
    case Kind::cosine:
      return ot::Cost::cosine;
  }
  return ot::Cost::euclidean;
}

std::string GroundMetric::name() const {
  switch (kind) {
    case Kind::learned:
      return squared ? "learned (squared)" : "learned";
    case Kind::euclidean:
      return "euclidean";
    case Kind::cosine:
      return "cosine";
  }
  return "";
}

GroundMetric::Kind parse_metric_kind(const std::string& text) {
  if (text == "learned") return GroundMetric::Kind::learned;
  if (text == "euclidean") return GroundMetric::Kind::euclidean;
  if (text == "cosine") return GroundMetric::Kind::cosine;
  throw Error::option("metric", "must be learned, euclidean or cosine, got '" + text + "'");
}

std::vector<double> pair_costs(const stage::DonorStore& store, const GroundMetric& metric,
                               const stage::OtSettings& settings,
                               const std::vector<std::pair<GlobalId, GlobalId>>& pairs,
                               stage::SolveReport& report) {
  std::vector<double> costs;
  costs.reserve(pairs.size());
  stage::BatchStage stage;
  Matrix<double> a_device;
  if (metric.kind == GroundMetric::Kind::learned) a_device = stage::metric_to_device(metric.a);
  for (std::size_t begin = 0; begin < pairs.size(); begin += pairs_per_chunk) {
    const std::size_t end = std::min(pairs.size(), begin + pairs_per_chunk);
    std::vector<GlobalId> donors;
    std::map<GlobalId, std::int32_t> cloud_of;
    std::vector<ot::Pair> problems;
    for (std::size_t p = begin; p < end; ++p) {
      for (GlobalId u : {pairs[p].first, pairs[p].second})
        if (cloud_of.emplace(u, static_cast<std::int32_t>(donors.size())).second) donors.push_back(u);
      problems.push_back({cloud_of[pairs[p].first], cloud_of[pairs[p].second]});
    }
    stage.stage(store, donors);
    std::vector<double> chunk;
    if (metric.kind == GroundMetric::Kind::learned) {
      if (!settings.exact() && settings.sinkhorn_float) {
        const auto projected = stage::project_clouds<float>(stage, donors, a_device);
        chunk = solve_chunk(projected.clouds, problems, metric.cost(), settings, report);
      } else {
        const auto projected = stage::project_clouds<double>(stage, donors, a_device);
        chunk = solve_chunk(projected.clouds, problems, metric.cost(), settings, report);
      }
    } else {
      chunk = solve_chunk(stage.raw_clouds(donors), problems, metric.cost(), settings, report);
    }
    costs.insert(costs.end(), chunk.begin(), chunk.end());
  }
  return costs;
}

}  // namespace kotml::eval
