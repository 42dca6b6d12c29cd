#include "kotml/eval/pair_ot.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <map>

#include "kotml/core/error.hpp"
#include "kotml/core/math.hpp"
#include "kotml/ot/network_simplex.hpp"
#include "kotml/ot/sinkhorn.hpp"
#include "projection_host.hpp"

namespace kotml::eval {
namespace {

/// Z(r, c) = Σ_f A(c, f) X(r, f), accumulated in double, features in order.
/// One thread takes a block of rows and eight components at a time (Aᵀ padded
/// to a multiple of eight columns with zeros), so that 4 × 8 independent sums
/// advance together instead of one dependent chain of d additions per entry;
/// each sum still adds its terms in feature order. Host backends run the block
/// as a SIMD kernel (projection_host.hpp).
template <class T>
struct ProjectRowBlocks {
  Matrix<const PointScalar> x;
  Matrix<const double> a_t;  // d × (k rounded up to project_block_comps), zero padded
  Matrix<T> z;

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t block) const {
    constexpr std::int64_t R = detail::project_block_rows, C = detail::project_block_comps;
    const auto n = static_cast<std::int64_t>(x.extent(0)), d = static_cast<std::int64_t>(x.extent(1));
    const auto k = static_cast<std::int64_t>(z.extent(1));
    const std::int64_t r0 = block * R;
    // Rows past the end repeat the last row; their sums are not written.
    std::int64_t row[R];
    for (std::int64_t i = 0; i < R; ++i) row[i] = r0 + i < n ? r0 + i : n - 1;
    for (std::int64_t c0 = 0; c0 < k; c0 += C) {
      double s[R][C] = {};
#ifdef KOTML_DEVICE_PASS
      for (std::int64_t f = 0; f < d; ++f) {
        const double* a = &a_t(f, c0);
        for (std::int64_t i = 0; i < R; ++i) {
          const double xv = static_cast<double>(x(row[i], f));
          for (std::int64_t l = 0; l < C; ++l) s[i][l] += a[l] * xv;
        }
      }
#else
      const PointScalar* rows[R];
      for (std::int64_t i = 0; i < R; ++i) rows[i] = &x(row[i], 0);
      detail::project_block_host(rows, &a_t(0, c0), static_cast<std::int64_t>(a_t.extent(1)), d, &s[0][0]);
#endif
      for (std::int64_t i = 0; i < R && r0 + i < n; ++i)
        for (std::int64_t l = 0; l < C && c0 + l < k; ++l) z(r0 + i, c0 + l) = static_cast<T>(s[i][l]);
    }
  }
};

struct TransposeMetric {
  Matrix<const double> a;
  Matrix<double> a_t;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t c, const std::int64_t f) const { a_t(f, c) = a(c, f); }
};

template <class T>
void launch_projection(const Matrix<const PointScalar>& X, const Matrix<const double>& A, const Matrix<T>& Z) {
  const auto rows = static_cast<std::int64_t>(X.extent(0));
  const auto k = static_cast<std::int64_t>(A.extent(0)), d = static_cast<std::int64_t>(A.extent(1));
  if (rows == 0 || k == 0) return;
  const std::int64_t padded =
      (k + detail::project_block_comps - 1) / detail::project_block_comps * detail::project_block_comps;
  Matrix<double> a_t("kotml::eval::projection_transposed", static_cast<std::size_t>(d),
                     static_cast<std::size_t>(padded));
  Kokkos::parallel_for("kotml::eval::transpose_metric",
                       Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>>({0, 0}, {k, d}), TransposeMetric{A, a_t});
  const std::int64_t blocks = (rows + detail::project_block_rows - 1) / detail::project_block_rows;
  Kokkos::parallel_for("kotml::eval::project_rows", Kokkos::RangePolicy<ExecSpace>(0, blocks),
                       ProjectRowBlocks<T>{X, a_t, Z});
}

/// Pairs solved together: bounded so that a GPU stage holds only their donors.
constexpr std::size_t pairs_per_chunk = 4096;

template <class T>
std::vector<double> solve_chunk(const ot::CloudBatch<T>& clouds, const std::vector<ot::Pair>& pairs,
                                ot::Cost cost, const OtSettings& settings, SolveReport& report) {
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

void OtSettings::validate() const {
  if (!(entropic_reg >= 0.0) || !std::isfinite(entropic_reg))
    throw Error::option("entropic-reg", "must be 0 (exact EMD) or positive, got " + std::to_string(entropic_reg));
  if (sinkhorn_max_iter < 1)
    throw Error::option("sinkhorn-max-iter", "must be at least 1, got " + std::to_string(sinkhorn_max_iter));
  if (!(sinkhorn_tol >= 0.0))
    throw Error::option("sinkhorn-tol", "must be zero or positive, got " + std::to_string(sinkhorn_tol));
  if (emd_max_iter < 1)
    throw Error::option("emd-max-iter", "must be at least 1, got " + std::to_string(emd_max_iter));
  if (emd_max_entries < 1)
    throw Error::option("emd-max-entries", "must be at least 1, got " + std::to_string(emd_max_entries));
}

void OtSettings::check_emd_size(const data::Cohort& cohort, const std::vector<GlobalId>& donors) const {
  if (!exact() || donors.size() < 2) return;
  // The largest pair is the two largest donors (ties: the first listed).
  const auto points = [&](GlobalId u) { return cohort.donors[static_cast<std::size_t>(u)].n_points; };
  std::size_t first = 0, second = 1;
  if (points(donors[second]) > points(donors[first])) std::swap(first, second);
  for (std::size_t i = 2; i < donors.size(); ++i) {
    if (points(donors[i]) > points(donors[first])) {
      second = first;
      first = i;
    } else if (points(donors[i]) > points(donors[second])) {
      second = i;
    }
  }
  const auto n = points(donors[first]), m = points(donors[second]);
  if (static_cast<double>(n) * static_cast<double>(m) <= static_cast<double>(emd_max_entries)) return;
  const auto& a = cohort.donors[static_cast<std::size_t>(donors[first])];
  const auto& b = cohort.donors[static_cast<std::size_t>(donors[second])];
  throw Error::option("emd-max-entries",
                      "exact EMD between donors '" + a.id + "' (" + std::to_string(n) + " points) and '" + b.id + "' (" +
                          std::to_string(m) + " points) needs " + std::to_string(n * m) +
                          " cost entries, more than the limit of " + std::to_string(emd_max_entries) +
                          ": use Sinkhorn for donors this large (--entropic-reg, e.g. 0.1), fewer cells per donor "
                          "(--n-cells), or raise --emd-max-entries");
}

void project_rows(const Matrix<const PointScalar>& X, const Matrix<const double>& A, const Matrix<double>& Z) {
  launch_projection(X, A, Z);
}
void project_rows(const Matrix<const PointScalar>& X, const Matrix<const double>& A, const Matrix<float>& Z) {
  launch_projection(X, A, Z);
}

Matrix<double> metric_to_device(const HostMatrix<double>& a) {
  Matrix<double> device(no_init("kotml::eval::metric"), a.extent(0), a.extent(1));
  Kokkos::deep_copy(device, a);
  return device;
}

template <class T>
ProjectedCloudsOf<T> project_clouds(const BatchStage& stage, const std::vector<GlobalId>& donors,
                                    const Matrix<const double>& A) {
  const auto k = static_cast<std::int64_t>(A.extent(0));
  ProjectedCloudsOf<T> out;
  out.donors = donors;
  // Each distinct staged block is projected once (group-by donors share one):
  // stage offset -> (first pool row, a donor staged there).
  std::map<std::int64_t, std::pair<std::int64_t, GlobalId>> projected_at;
  std::vector<std::int64_t> first_row(donors.size());
  std::int64_t total = 0;
  for (std::size_t c = 0; c < donors.size(); ++c) {
    const auto at = stage.offset(donors[c]);
    auto found = projected_at.find(at);
    if (found == projected_at.end()) {
      found = projected_at.emplace(at, std::make_pair(total, donors[c])).first;
      total += stage.rows(donors[c]);
    }
    first_row[c] = found->second.first;
  }
  Matrix<T> z(no_init("kotml::eval::projected_points"), static_cast<std::size_t>(total), static_cast<std::size_t>(k));
  for (const auto& [at, placed] : projected_at) {
    const auto [row, donor] = placed;
    const auto n = stage.rows(donor);
    if (n == 0) continue;
    project_rows(stage.donor_points(donor), A,
                 Kokkos::subview(z, std::make_pair(row, row + n), Kokkos::ALL()));
  }
  std::vector<std::int64_t> weight_begin;
  auto weights = stage_weights(stage.store(), donors, weight_begin);
  std::vector<ot::CloudRange> ranges;
  for (std::size_t c = 0; c < donors.size(); ++c)
    ranges.push_back({first_row[c], weight_begin[c], stage.rows(donors[c])});
  out.clouds = ot::CloudBatch<T>(z, weights, std::move(ranges));
  return out;
}

template ProjectedCloudsOf<double> project_clouds<double>(const BatchStage&, const std::vector<GlobalId>&,
                                                          const Matrix<const double>&);
template ProjectedCloudsOf<float> project_clouds<float>(const BatchStage&, const std::vector<GlobalId>&,
                                                        const Matrix<const double>&);

void SolveReport::count(ot::SolveStatus status) {
  switch (status) {
    case ot::SolveStatus::optimal:
      break;
    case ot::SolveStatus::max_iter:
      ++max_iter;
      break;
    case ot::SolveStatus::infeasible:
      ++infeasible;
      break;
    case ot::SolveStatus::numerical_error:
      ++numerical;
      break;
  }
}

std::vector<std::string> SolveReport::warnings(const std::string& what) const {
  std::vector<std::string> lines;
  if (max_iter > 0)
    lines.push_back(what + ": " + std::to_string(max_iter) +
                    " OT solve(s) stopped at the iteration limit before converging");
  if (infeasible > 0)
    lines.push_back(what + ": " + std::to_string(infeasible) + " OT solve(s) could not match the marginals");
  if (numerical > 0)
    lines.push_back(what + ": " + std::to_string(numerical) + " OT solve(s) hit non-finite values");
  return lines;
}

std::vector<double> pair_costs(const DonorStore& store, const GroundMetric& metric,
                               const OtSettings& settings,
                               const std::vector<std::pair<GlobalId, GlobalId>>& pairs,
                               SolveReport& report) {
  std::vector<double> costs;
  costs.reserve(pairs.size());
  BatchStage stage;
  Matrix<double> a_device;
  if (metric.kind == GroundMetric::Kind::learned) a_device = metric_to_device(metric.a);
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
        const auto projected = project_clouds<float>(stage, donors, a_device);
        chunk = solve_chunk(projected.clouds, problems, metric.cost(), settings, report);
      } else {
        const auto projected = project_clouds<double>(stage, donors, a_device);
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
