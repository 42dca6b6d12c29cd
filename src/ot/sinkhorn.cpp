#include "kotml/ot/sinkhorn.hpp"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kotml/core/error.hpp"
#include "kotml/core/log.hpp"
#include "kotml/core/progress.hpp"
#include "kotml/core/region.hpp"
#include "kotml/dist/comm.hpp"
#include "kotml/ot/tiled_sinkhorn.hpp"
#include "cost_rows.hpp"
#include "sinkhorn_engine.hpp"

namespace kotml::ot {

const char* to_string(SinkhornDomain domain) {
  switch (domain) {
    case SinkhornDomain::log: return "log";
    case SinkhornDomain::scaling: return "scaling";
    default: return "auto";
  }
}

SinkhornDomain parse_sinkhorn_domain(const std::string& text, const char* option) {
  for (const SinkhornDomain d : {SinkhornDomain::automatic, SinkhornDomain::log, SinkhornDomain::scaling})
    if (text == to_string(d)) return d;
  throw Error::option(option, "must be auto, log or scaling, got '" + text + "'");
}

void SinkhornOptions::validate() const {
  if (!(epsilon > 0) || !std::isfinite(epsilon))
    throw Error::option("epsilon", "must be positive and finite, got " + log::number_text(epsilon));
  if (!(tau_a > 0 && tau_a <= 1))
    throw Error::option("tau-a", "must be in (0, 1], got " + log::number_text(tau_a));
  if (!(tau_b > 0 && tau_b <= 1))
    throw Error::option("tau-b", "must be in (0, 1], got " + log::number_text(tau_b));
  if (max_iter < 1) throw Error::option("max-iter", "must be at least 1, got " + std::to_string(max_iter));
  if (!(tol >= 0)) throw Error::option("tol", "must be zero or positive, got " + log::number_text(tol));
  if (check_every < 1)
    throw Error::option("check-every", "must be at least 1, got " + std::to_string(check_every));
}

template <class T>
SinkhornSummary SinkhornBatchResult<T>::summary(std::int64_t u) const {
  SinkhornSummary s;
  auto pick = [u](const auto& view) {
    auto one = Kokkos::subview(view, u);
    typename std::decay_t<decltype(view)>::non_const_value_type value{};
    Kokkos::deep_copy(value, one);
    return value;
  };
  s.cost = pick(cost);
  s.objective = pick(objective);
  s.marginal_error = pick(marginal_error);
  s.iterations = pick(iterations);
  s.status = static_cast<SolveStatus>(pick(status));
  s.scaling_domain = pick(scaling_domain) != 0;
  s.epsilon = epsilon;
  return s;
}

template <class T>
std::vector<SinkhornSummary> SinkhornBatchResult<T>::summaries() const {
  auto c = Kokkos::create_mirror_view_and_copy(HostSpace(), cost);
  auto o = Kokkos::create_mirror_view_and_copy(HostSpace(), objective);
  auto e = Kokkos::create_mirror_view_and_copy(HostSpace(), marginal_error);
  auto it = Kokkos::create_mirror_view_and_copy(HostSpace(), iterations);
  auto st = Kokkos::create_mirror_view_and_copy(HostSpace(), status);
  auto sd = Kokkos::create_mirror_view_and_copy(HostSpace(), scaling_domain);
  std::vector<SinkhornSummary> all(c.extent(0));
  for (std::size_t u = 0; u < all.size(); ++u)
    all[u] = {c(u), o(u), e(u), epsilon, it(u), static_cast<SolveStatus>(st(u)), sd(u) != 0};
  return all;
}

namespace {

using detail::BlockList;
using detail::LineMember;
using detail::SlotTable;

/// Consecutive points of a cloud: other(j) = first + j.
struct Consecutive {
  std::int64_t first;
  KOKKOS_INLINE_FUNCTION std::int64_t operator()(std::int64_t j) const { return first + j; }
};

/// Costs of the rows of the blocks from the pool's points (row i of a slot is
/// its source point i, entry j the cost to its target point j), and, if `sums`
/// is given, each row's sum in double and column order (for a relative ε).
template <class T>
struct CostLines {
  BlockList blocks;
  Vector<T> cost;  // empty: sums only
  Vector<const std::int64_t> cost_offset, line_begin, other_count, line_point, other_point;
  Matrix<const T> points;
  Matrix<const double> points_t;  // the pool, coordinate-major (host kernel)
  Vector<const double> norms;
  Vector<double> sums;
  Cost kind;

  KOKKOS_INLINE_FUNCTION void operator()(const LineMember& team) const {
    const std::int64_t slot = blocks(team.league_rank(), 0);
    const std::int64_t length = other_count(slot);
    T* base = cost.extent(0) > 0 ? cost.data() + cost_offset(slot) : nullptr;
    Kokkos::parallel_for(
        Kokkos::TeamThreadRange(team, blocks(team.league_rank(), 1), blocks(team.league_rank(), 2)),
        [&](const std::int64_t i) {
          T* row = base ? base + i * length : nullptr;
#ifdef KOTML_DEVICE_PASS
          const double total = detail::cost_row(
              team, kind, points, line_point(slot) + i, Consecutive{other_point(slot)}, length, norms,
              [&](const std::int64_t j, const double v) {
                if (row) row[j] = static_cast<T>(v);
              });
#else
          const std::int64_t stride = static_cast<std::int64_t>(points_t.extent(1));
          const std::int64_t x = line_point(slot) + i, y = other_point(slot);
          const double total = detail::cost_row_host(kind, points_t.data() + x, points_t.data() + y, stride,
                                                     static_cast<int>(points_t.extent(0)), length,
                                                     kind == Cost::cosine ? norms(x) : 0.0,
                                                     kind == Cost::cosine ? norms.data() + y : nullptr, row,
                                                     sums.extent(0) > 0);
#endif
          if (sums.extent(0) > 0) Kokkos::single(Kokkos::PerThread(team), [&]() { sums(line_begin(slot) + i) = total; });
        });
  }
};

/// Marginals of each problem from its clouds' weights; normalised to unit mass
/// when balanced. log 0 = −∞ marks a zero weight.
template <class T>
struct FillWeights {
  Vector<const std::int64_t> row_begin, col_begin;
  Kokkos::View<const std::int32_t*, MemSpace> source, target;
  Kokkos::View<const std::int64_t* [3], MemSpace> table;
  Vector<const double> weights;
  Vector<T> a, log_a, b, log_b;
  bool normalise;

  KOKKOS_INLINE_FUNCTION void fill(std::int32_t cloud, std::int64_t at, const Vector<T>& w,
                                   const Vector<T>& log_w) const {
    const std::int64_t begin = table(cloud, 1), size = table(cloud, 2);
    double total = 0;
    for (std::int64_t i = 0; i < size; ++i) total += weights(begin + i);
    const double scale = normalise ? 1.0 / total : 1.0;
    for (std::int64_t i = 0; i < size; ++i) {
      const double v = weights(begin + i) * scale;
      w(at + i) = static_cast<T>(v);
      log_w(at + i) = v > 0 ? static_cast<T>(kmath::log(v)) : -kmath::infinity<T>();
    }
  }

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t u) const {
    fill(source(u), row_begin(u), a, log_a);
    fill(target(u), col_begin(u), b, log_b);
  }
};

/// Whether problem u goes to the tiled engine: its cost and transposed cost
/// alone pass the workspace, no dense plan is asked for, and the problem is
/// balanced. (Unbalanced, the engine's problem is another one: OTT penalises
/// the entropy of the plan, this solver its KL divergence from a⊗b, which
/// differ by ε⟨P, log a ⊕ log b⟩ once the marginals may move.)
template <class T>
bool beyond_workspace(const BatchLayout& layout, std::int64_t u, const SinkhornOptions& options) {
  const double bytes = 2.0 * static_cast<double>(sizeof(T)) * static_cast<double>(layout.rows(u)) *
                       static_cast<double>(layout.cols(u));
  return options.balanced() && !options.keep_plan && bytes > static_cast<double>(options.workspace_bytes);
}

/// A cloud's weights in double, normalised to unit mass when balanced (as
/// FillWeights does).
template <class T>
std::vector<double> cloud_weights(const CloudBatch<T>& clouds, const CloudRange& cloud, bool normalise) {
  const auto range = std::make_pair(cloud.weight_begin, cloud.weight_begin + cloud.size);
  auto host = Kokkos::create_mirror_view_and_copy(HostSpace(), Kokkos::subview(clouds.weights(), range));
  std::vector<double> w(host.data(), host.data() + cloud.size);
  double total = 0;
  for (const double v : w) total += v;
  if (normalise)
    for (double& v : w) v /= total;
  return w;
}

template <class T>
void copy_into(const Vector<T>& view, std::int64_t first, const std::vector<double>& values) {
  auto host = Kokkos::create_mirror_view(
      Kokkos::subview(view, std::make_pair(first, first + static_cast<std::int64_t>(values.size()))));
  for (std::size_t i = 0; i < values.size(); ++i) host(i) = static_cast<T>(values[i]);
  Kokkos::deep_copy(Kokkos::subview(view, std::make_pair(first, first + static_cast<std::int64_t>(values.size()))),
                    host);
}

void copy_rows_into(const Matrix<double>& matrix, std::int64_t first, const std::vector<double>& rows) {
  const auto dim = static_cast<std::int64_t>(matrix.extent(1));
  const std::int64_t count = dim > 0 ? static_cast<std::int64_t>(rows.size()) / dim : 0;
  const auto block = Kokkos::subview(matrix, std::make_pair(first, first + count), Kokkos::ALL);
  auto host = Kokkos::create_mirror_view(block);
  for (std::int64_t i = 0; i < count; ++i)
    for (std::int64_t k = 0; k < dim; ++k) host(i, k) = rows[static_cast<std::size_t>(i * dim + k)];
  Kokkos::deep_copy(block, host);
}

template <class T>
void set_scalar(const Vector<T>& view, std::int64_t u, T value) {
  Kokkos::deep_copy(Kokkos::subview(view, u), value);
}

/// A cloud's points (rows of the pool).
template <class T>
Matrix<const T> cloud_points(const CloudBatch<T>& clouds, const CloudRange& cloud) {
  return Kokkos::subview(clouds.points(), std::make_pair(cloud.point_begin, cloud.point_begin + cloud.size), Kokkos::ALL);
}

/// The tiled engine (tiled_sinkhorn.hpp) for one problem on `self` (this rank
/// alone; the engine keeps a pointer to it): costs stored within the workspace,
/// recomputed tile by tile otherwise; the tolerance checked every check_every
/// iterations.
template <class T>
std::unique_ptr<TiledSinkhorn<T>> tiled_engine(const dist::Comm& self, const CloudBatch<T>& clouds, const CloudRange& source,
                                               const CloudRange& target, const std::vector<double>& a,
                                               const std::vector<double>& b, Cost cost, const SinkhornOptions& options,
                                               double epsilon) {
  Vector<double> a_device(no_init("kotml::ot::tiled_a"), a.size());
  Vector<double> b_device(no_init("kotml::ot::tiled_b"), b.size());
  copy_into(a_device, 0, a);
  copy_into(b_device, 0, b);
  PointCost point_cost;
  point_cost.kind = cost;
  TiledSinkhornOptions tiled;
  tiled.epsilon = epsilon;
  tiled.tau_a = options.tau_a;
  tiled.tau_b = options.tau_b;
  tiled.threshold = options.tol;
  tiled.inner_iterations = options.check_every;
  tiled.max_iterations = options.max_iter;
  tiled.cost_memory = options.workspace_bytes;
  tiled.domain = options.domain;
  return std::make_unique<TiledSinkhorn<T>>(self, RowBlock::of(source.size, 1, 0),
                                            TiledPoints<T>{cloud_points(clouds, source), a_device, {}},
                                            TiledPoints<T>{cloud_points(clouds, target), b_device, {}}, point_cost, tiled);
}

/// Potentials between this solver's convention (P = a b exp((f + g − C)/ε))
/// and the engine's (T = exp((F + G − C)/ε)): F = f + ε log a (0 where a = 0).
std::vector<double> to_engine(std::vector<double> f, const std::vector<double>& a, double epsilon) {
  for (std::size_t i = 0; i < f.size(); ++i) f[i] = a[i] > 0 ? f[i] + epsilon * std::log(a[i]) : 0.0;
  return f;
}
std::vector<double> from_engine(std::vector<double> F, const std::vector<double>& a, double epsilon) {
  for (std::size_t i = 0; i < F.size(); ++i) F[i] = a[i] > 0 ? F[i] - epsilon * std::log(a[i]) : 0.0;
  return F;
}

template <class T>
std::vector<double> host_range(const Vector<T>& view, std::int64_t first, std::int64_t count) {
  auto host = Kokkos::create_mirror_view_and_copy(HostSpace(), Kokkos::subview(view, std::make_pair(first, first + count)));
  return std::vector<double>(host.data(), host.data() + count);
}

/// Problem u's state for the batch kernel's finalize (sinkhorn_engine.hpp), from
/// the engine's plan: the potentials in this solver's convention, the
/// log-sum-exps that give back the plan's marginals (r_i = a_i·exp(f_i/ε +
/// lse_i)), and ⟨T, C⟩ as the first row's part of the per-row costs (finalize
/// sums the rows). Then finalize forms cost, objective, error and status.
template <class T>
void finalize_from_plan(TiledSinkhorn<T>& engine, const BatchLayout& layout, std::int64_t u, const SlotTable& slot,
                        const std::vector<double>& a, const std::vector<double>& b, const SinkhornOptions& options,
                        double epsilon, detail::SinkhornState<T>& state, detail::SinkhornOutputs& out) {
  const std::vector<double> f = from_engine(engine.f(), a, epsilon), g = from_engine(engine.g(), b, epsilon);
  const std::vector<std::int32_t> row_group(a.size(), 0), col_group(b.size(), 0);
  const std::vector<double> row_marginal = engine.apply(std::vector<double>(b.size(), 1.0), col_group, 1);
  const std::vector<double> col_marginal = engine.transpose_apply(std::vector<double>(a.size(), 1.0), row_group, 1);
  std::vector<double> row_cost(a.size(), 0.0);
  row_cost[0] = engine.block_sums(row_group, 1, col_group, 1).cost.at(0);
  const auto lse_of = [&](const std::vector<double>& w, const std::vector<double>& pot,
                          const std::vector<double>& marginal) {
    std::vector<double> lse(w.size(), -std::numeric_limits<double>::infinity());
    for (std::size_t i = 0; i < w.size(); ++i)
      if (w[i] > 0 && marginal[i] > 0) lse[i] = std::log(marginal[i] / w[i]) - pot[i] / epsilon;
    return lse;
  };
  copy_into(state.f, layout.row_offset[u], f);
  copy_into(state.g, layout.col_offset[u], g);
  copy_into(state.lse_row, layout.row_offset[u], lse_of(a, f, row_marginal));
  copy_into(state.lse_col, layout.col_offset[u], lse_of(b, g, col_marginal));
  copy_into(state.row_cost, layout.row_offset[u], row_cost);
  detail::finalize(slot, state, out, epsilon, options.tau_a, options.tau_b);
}

/// Problem u on the tiled engine, from the potentials held (a warm start, or
/// zeros), with this solver's outputs. The engine iterates the same problem
/// with the same tolerance in OTT's cost forms (sqeuclidean as ‖x‖² + ‖y‖² −
/// 2x·y, cosine with its 1e-8 ridge) and update order (g first): the result
/// equals the batch kernel's to within the tolerance, not bit for bit.
template <class T>
void solve_in_tiles(const CloudBatch<T>& clouds, const Pair& pair, Cost cost, const SinkhornOptions& options,
                    double epsilon, std::int64_t u, SinkhornBatchResult<T>& result, detail::SinkhornState<T>& state,
                    detail::SinkhornOutputs& out) {
  ProfilingRegion region("kotml::ot::sinkhorn_in_tiles");
  const BatchLayout& layout = result.layout;
  const CloudRange& source = clouds.cloud(pair.source);
  const CloudRange& target = clouds.cloud(pair.target);
  // Non-finite points (a diverged metric) get what the batch kernel gives
  // them, a numerical_error and a non-finite cost, for the caller to name the
  // cause (--entropic-reg, --lr); the engine would refuse them as bad input.
  const auto numerical_error = [&]() {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    set_scalar(out.cost, u, nan);
    set_scalar(out.objective, u, nan);
    set_scalar(out.marginal_error, u, nan);
    set_scalar(out.status, u, static_cast<std::int32_t>(SolveStatus::numerical_error));
  };
  if (count_non_finite(cloud_points(clouds, source)) + count_non_finite(cloud_points(clouds, target)) > 0)
    return numerical_error();
  const std::vector<double> a = cloud_weights(clouds, source, options.balanced());
  const std::vector<double> b = cloud_weights(clouds, target, options.balanced());
  const dist::Comm self(MPI_COMM_SELF);
  const auto engine = tiled_engine(self, clouds, source, target, a, b, cost, options, epsilon);
  // Likewise an ε below what T resolves for these costs, which the engine
  // refuses as its own option (kotml ot's --epsilon).
  try {
    engine->epsilon();
  } catch (const Error&) {
    return numerical_error();
  }
  engine->set_potentials(to_engine(host_range(state.f, layout.row_offset[u], source.size), a, epsilon),
                         to_engine(host_range(state.g, layout.col_offset[u], target.size), b, epsilon));
  const TiledSinkhornReport report = engine->solve();
  if (log::verbose())
    log::info("sinkhorn: a " + std::to_string(source.size) + " x " + std::to_string(target.size) +
              " pair passes the cost memory: tiled engine, costs " + (report.stored ? "stored" : "recomputed per tile") +
              ", " + std::to_string(report.iterations) + " iterations");

  set_scalar(out.iterations, u, static_cast<std::int32_t>(report.iterations));
  set_scalar(out.status, u, static_cast<std::int32_t>(report.status));
  set_scalar(out.scaling_domain, u, static_cast<std::int32_t>(report.scaling_domain ? 1 : 0));
  SlotTable slot;
  slot.add(u, 0, layout.row_offset[u], layout.col_offset[u], source.size, target.size, source.point_begin,
           target.point_begin);
  slot.upload();
  finalize_from_plan(*engine, layout, u, slot, a, b, options, epsilon, state, out);
  std::int32_t status = 0;
  Kokkos::deep_copy(status, Kokkos::subview(out.status, u));
  if (options.point_gradients && status != static_cast<std::int32_t>(SolveStatus::numerical_error)) {
    const TiledPointGradients gradients = engine->point_gradients();
    copy_rows_into(result.source_gradient, layout.row_offset[u], gradients.rows);
    copy_rows_into(result.target_gradient, layout.col_offset[u], gradients.cols);
  }
}

}  // namespace

template <class T>
SinkhornBatchResult<T> sinkhorn(const CloudBatch<T>& clouds, const std::vector<Pair>& pairs, Cost cost,
                                const SinkhornOptions& options, const SinkhornWarmStart<T>* warm,
                                SinkhornWorkspace<T>* workspace) {
  options.validate();
  if (options.point_gradients && cost == Cost::cosine)
    throw Error::option("cost", "gradients with respect to the points are available for the euclidean "
                                "and sqeuclidean costs, not cosine");
  SinkhornBatchResult<T> result;
  result.layout = BatchLayout::of(clouds, pairs);
  const BatchLayout& layout = result.layout;
  const std::int64_t n_problems = layout.problems();
  detail::SinkhornOutputs out;
  out.allocate(n_problems);
  detail::SinkhornState<T> state;
  state.allocate(layout.total_rows(), layout.total_cols());

  std::vector<std::int32_t> source_host(pairs.size()), target_host(pairs.size());
  for (std::size_t u = 0; u < pairs.size(); ++u) {
    source_host[u] = pairs[u].source;
    target_host[u] = pairs[u].target;
  }
  const auto source = device_copy_of<Kokkos::View<std::int32_t*, MemSpace>>(source_host, "kotml::ot::pair_source");
  const auto target = device_copy_of<Kokkos::View<std::int32_t*, MemSpace>>(target_host, "kotml::ot::pair_target");
  Kokkos::parallel_for("kotml::ot::sinkhorn_weights", Kokkos::RangePolicy<ExecSpace>(0, n_problems),
                       FillWeights<T>{layout.device_row_offset, layout.device_col_offset, source, target,
                                      clouds.device_table(), clouds.weights(), state.a, state.log_a,
                                      state.b, state.log_b, options.balanced()});
  if (warm) {
    if (warm->f.extent(0) != static_cast<std::size_t>(layout.total_rows()) ||
        warm->g.extent(0) != static_cast<std::size_t>(layout.total_cols()))
      throw Error("", "warm start", "the potentials do not match the batch layout");
    Kokkos::deep_copy(state.f, warm->f);
    Kokkos::deep_copy(state.g, warm->g);
  }

  // Every problem as a slot (cost offsets are set per chunk below).
  SlotTable all;
  for (std::int64_t u = 0; u < n_problems; ++u) {
    const auto& p = pairs[static_cast<std::size_t>(u)];
    all.add(u, 0, layout.row_offset[u], layout.col_offset[u], layout.rows(u), layout.cols(u),
            clouds.cloud(p.source).point_begin, clouds.cloud(p.target).point_begin);
  }
  all.upload();
  std::vector<std::int64_t> every(static_cast<std::size_t>(n_problems));
  for (std::int64_t u = 0; u < n_problems; ++u) every[static_cast<std::size_t>(u)] = u;

  const detail::PoolViews pool = detail::pool_views<T>(clouds.points(), cost);
  const Vector<double>& norms = pool.norms;
  const Matrix<double>& points_t = pool.points_t;

  double epsilon = options.epsilon;
  // The mean cost from the per-row sums in state.row_cost, added in problem and
  // row order.
  auto relative_epsilon = [&]() {
    auto sums = Kokkos::create_mirror_view_and_copy(HostSpace(), state.row_cost);
    double total = 0, entries = 0;
    for (std::int64_t u = 0; u < n_problems; ++u) {
      for (std::int64_t i = layout.row_offset[u]; i < layout.row_offset[u + 1]; ++i) total += sums(i);
      entries += static_cast<double>(layout.rows(u)) * static_cast<double>(layout.cols(u));
    }
    const double mean = entries > 0 ? total / entries : 0.0;
    // All costs zero: every plan is optimal; any ε gives the same cost.
    return mean > 0 ? options.epsilon * mean : options.epsilon;
  };

  // Optional outputs.
  Vector<const std::int64_t> plan_offset_device;
  if (options.keep_plan) {
    result.plan_offset.assign(static_cast<std::size_t>(n_problems) + 1, 0);
    for (std::int64_t u = 0; u < n_problems; ++u)
      result.plan_offset[u + 1] = result.plan_offset[u] + layout.rows(u) * layout.cols(u);
    result.plan = Vector<T>(no_init("kotml::ot::sinkhorn_plans"), result.plan_offset.back());
    plan_offset_device = device_copy_of<Vector<std::int64_t>>(result.plan_offset, "kotml::ot::plan_offset");
  }
  Matrix<const T> gradient_points;
  if (options.point_gradients) {
    result.source_gradient = Matrix<double>("kotml::ot::source_gradient", layout.total_rows(), clouds.dim());
    result.target_gradient = Matrix<double>("kotml::ot::target_gradient", layout.total_cols(), clouds.dim());
    gradient_points = clouds.points();
  }

  // Problems beyond the workspace on their own go to the tiled engine; the
  // others in chunks of consecutive problems whose costs fit the workspace.
  const std::size_t per_entry = 2 * sizeof(T);
  std::vector<std::int64_t> in_tiles;
  std::vector<std::vector<std::int64_t>> chunks;
  std::int64_t largest = 0, entries = 0;
  for (std::int64_t u = 0; u < n_problems; ++u) {
    if (beyond_workspace<T>(layout, u, options)) {
      in_tiles.push_back(u);
      continue;
    }
    const std::int64_t e = layout.rows(u) * layout.cols(u);
    if (chunks.empty() || static_cast<std::size_t>(entries + e) * per_entry > options.workspace_bytes) {
      chunks.emplace_back();
      entries = 0;
    }
    chunks.back().push_back(u);
    entries += e;
    largest = std::max(largest, entries);
  }
  SinkhornWorkspace<T> own;
  SinkhornWorkspace<T>& buffers = workspace ? *workspace : own;
  if (static_cast<std::int64_t>(buffers.cost.extent(0)) < largest) {
    buffers.cost = Vector<T>();  // released before the larger ones are made
    buffers.cost_t = Vector<T>();
    buffers.cost = Vector<T>(no_init("kotml::ot::sinkhorn_cost"), static_cast<std::size_t>(largest));
    buffers.cost_t = Vector<T>(no_init("kotml::ot::sinkhorn_cost_t"), static_cast<std::size_t>(largest));
  }
  const Vector<T> cost_buffer = buffers.cost, cost_t_buffer = buffers.cost_t;

  // A relative ε needs every cost before any solve: with one chunk the costs are
  // summed while they are stored, otherwise in a pass of their own (same sums).
  bool sums_pending = options.relative_epsilon && n_problems > 0;
  if (sums_pending && (chunks.size() > 1 || !in_tiles.empty())) {
    auto blocks = detail::make_blocks(all, every, true);
    Kokkos::parallel_for("kotml::ot::sinkhorn_cost_sums", detail::line_policy(blocks.extent(0)),
                         CostLines<T>{blocks, Vector<T>(), all.d_cost_offset, all.d_row_begin, all.d_cols,
                                      all.d_source_point, all.d_target_point, clouds.points(), points_t, norms,
                                      state.row_cost, cost});
    epsilon = relative_epsilon();
    sums_pending = false;
  }

  for (const auto& chunk : chunks) {
    SlotTable slots;
    std::int64_t at = 0;
    std::vector<std::int64_t> members;
    for (const std::int64_t u : chunk) {
      slots.add(u, at, layout.row_offset[u], layout.col_offset[u], layout.rows(u), layout.cols(u),
                all.source_point[u], all.target_point[u]);
      members.push_back(static_cast<std::int64_t>(members.size()));
      at += layout.rows(u) * layout.cols(u);
    }
    slots.upload();
    auto row_blocks = detail::make_blocks(slots, members, true);
    Kokkos::parallel_for("kotml::ot::sinkhorn_costs", detail::line_policy(row_blocks.extent(0)),
                         CostLines<T>{row_blocks, cost_buffer, slots.d_cost_offset, slots.d_row_begin, slots.d_cols,
                                      slots.d_source_point, slots.d_target_point, clouds.points(), points_t, norms,
                                      sums_pending ? state.row_cost : Vector<double>(), cost});
    if (sums_pending) {
      epsilon = relative_epsilon();
      sums_pending = false;
    }
    const detail::SinkhornProblem<T> problem{
        slots,   cost_buffer,
        cost_t_buffer, options,
        epsilon, {result.plan, plan_offset_device},
        {cost, gradient_points, points_t, result.source_gradient, result.target_gradient}};
    detail::run_sinkhorn<T>(problem, state, out);
  }
  for (const std::int64_t u : in_tiles)
    solve_in_tiles(clouds, pairs[static_cast<std::size_t>(u)], cost, options, epsilon, u, result, state, out);
  result.epsilon = epsilon;

  result.cost = out.cost;
  result.objective = out.objective;
  result.marginal_error = out.marginal_error;
  result.iterations = out.iterations;
  result.status = out.status;
  result.scaling_domain = out.scaling_domain;
  result.f = state.f;
  result.g = state.g;
  return result;
}

// ----------------------------------------------------------------- dense

namespace {

template <class T>
void row_sums(const Matrix<const T>& C, const Vector<double>& sums) {
  const auto m = static_cast<std::int64_t>(C.extent(1));
  Kokkos::parallel_for(
      "kotml::ot::dense_row_sums", Kokkos::RangePolicy<ExecSpace>(0, C.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) {
        double s = 0;
        for (std::int64_t j = 0; j < m; ++j) s += static_cast<double>(C(i, j));
        sums(i) = s;
      });
}

/// Mean entry of C, rows summed in order on the host (deterministic).
template <class T>
double mean_of(const Matrix<const T>& C) {
  const auto n = static_cast<std::int64_t>(C.extent(0));
  const auto m = static_cast<std::int64_t>(C.extent(1));
  Vector<double> sums(no_init("kotml::ot::dense_row_sums"), n);
  row_sums(C, sums);
  auto host = Kokkos::create_mirror_view_and_copy(HostSpace(), sums);
  double total = 0;
  for (std::int64_t i = 0; i < n; ++i) total += host(i);
  return n * m > 0 ? total / (static_cast<double>(n) * static_cast<double>(m)) : 0.0;
}

/// Marginals of a dense problem: a, b as given, normalised to unit mass when
/// balanced; log 0 = −∞ marks a zero weight.
template <class T>
struct DenseWeights {
  Vector<const double> a_in, b_in;
  Vector<T> a, log_a, b, log_b;
  bool normalise;

  KOKKOS_INLINE_FUNCTION void fill(const Vector<const double>& in, const Vector<T>& w, const Vector<T>& log_w) const {
    const auto count = static_cast<std::int64_t>(in.extent(0));
    double total = 0;
    for (std::int64_t i = 0; i < count; ++i) total += in(i);
    const double scale = normalise ? 1.0 / total : 1.0;
    for (std::int64_t i = 0; i < count; ++i) {
      const double v = in(i) * scale;
      w(i) = static_cast<T>(v);
      log_w(i) = v > 0 ? static_cast<T>(kmath::log(v)) : -kmath::infinity<T>();
    }
  }
  KOKKOS_INLINE_FUNCTION void operator()(const int side) const {
    if (side == 0)
      fill(a_in, a, log_a);
    else
      fill(b_in, b, log_b);
  }
};

/// Checks one side's weights on the host: finite, ≥ 0, positive sum.
void check_marginal(const Vector<const double>& w, std::int64_t expected, const char* name) {
  if (static_cast<std::int64_t>(w.extent(0)) != expected)
    throw Error("", name, "has " + std::to_string(w.extent(0)) + " entries, the cost needs " +
                              std::to_string(expected));
  auto host = Kokkos::create_mirror_view_and_copy(HostSpace(), w);
  double sum = 0;
  for (std::int64_t i = 0; i < expected; ++i) {
    if (!std::isfinite(host(i))) throw Error("", name, "entry " + std::to_string(i) + " is not finite");
    if (host(i) < 0) throw Error("", name, "entry " + std::to_string(i) + " is negative");
    sum += host(i);
  }
  if (!(sum > 0)) throw Error("", name, "the weights sum to zero");
}

}  // namespace

template <class T>
SinkhornSummary DenseSinkhorn<T>::solve(const Matrix<const T>& C, const Vector<const double>& a,
                                        const Vector<const double>& b, const SinkhornOptions& options,
                                        const Vector<T>& f, const Vector<T>& g, const Matrix<T>& plan) {
  options.validate();
  const auto n = static_cast<std::int64_t>(C.extent(0));
  const auto m = static_cast<std::int64_t>(C.extent(1));
  if (n == 0 || m == 0) throw Error("", "cost", "the cost matrix is empty");
  check_marginal(a, n, "a");
  check_marginal(b, m, "b");
  if (static_cast<std::int64_t>(f.extent(0)) != n || static_cast<std::int64_t>(g.extent(0)) != m)
    throw Error("", "potentials", "f and g must have one entry per row and per column of the cost");
  if (options.keep_plan && (static_cast<std::int64_t>(plan.extent(0)) != n ||
                            static_cast<std::int64_t>(plan.extent(1)) != m))
    throw Error("", "plan", "the plan must have the shape of the cost");
  if (!C.span_is_contiguous()) throw Error("", "cost", "the cost matrix must be contiguous");

  if (static_cast<std::int64_t>(cost_t_.extent(0)) != n * m)
    cost_t_ = Vector<T>(no_init("kotml::ot::dense_cost_t"), n * m);

  double epsilon = options.epsilon;
  if (options.relative_epsilon) {
    const double mean = mean_of(C);
    if (mean > 0) epsilon = options.epsilon * mean;
  }

  detail::SinkhornState<T> state;
  state.allocate(n, m);
  Kokkos::parallel_for("kotml::ot::dense_weights", Kokkos::RangePolicy<ExecSpace>(0, 2),
                       DenseWeights<T>{a, b, state.a, state.log_a, state.b, state.log_b, options.balanced()});
  Kokkos::deep_copy(state.f, f);
  Kokkos::deep_copy(state.g, g);

  SlotTable slots;
  slots.add(0, 0, 0, 0, n, m);
  slots.upload();
  detail::SinkhornOutputs out;
  out.allocate(1);
  Vector<T> plan_flat;
  std::vector<std::int64_t> zero{0};
  Vector<const std::int64_t> plan_offset;
  if (options.keep_plan) {
    plan_flat = Vector<T>(plan.data(), static_cast<std::size_t>(n * m));
    plan_offset = device_copy_of<Vector<std::int64_t>>(zero, "kotml::ot::dense_plan_offset");
  }
  Vector<const T> cost_flat(C.data(), static_cast<std::size_t>(n * m));
  const detail::SinkhornProblem<T> problem{slots, cost_flat, cost_t_, options, epsilon, {plan_flat, plan_offset}, {}};
  detail::run_sinkhorn<T>(problem, state, out);
  Kokkos::deep_copy(f, state.f);
  Kokkos::deep_copy(g, state.g);

  SinkhornSummary s;
  auto pick_d = [](const Vector<double>& v) {
    double x = 0;
    Kokkos::deep_copy(x, Kokkos::subview(v, 0));
    return x;
  };
  auto pick_i = [](const Vector<std::int32_t>& v) {
    std::int32_t x = 0;
    Kokkos::deep_copy(x, Kokkos::subview(v, 0));
    return x;
  };
  s.cost = pick_d(out.cost);
  s.objective = pick_d(out.objective);
  s.marginal_error = pick_d(out.marginal_error);
  s.iterations = pick_i(out.iterations);
  s.status = static_cast<SolveStatus>(pick_i(out.status));
  s.scaling_domain = pick_i(out.scaling_domain) != 0;
  s.epsilon = epsilon;
  return s;
}

namespace {

template <class T>
void plan_entries(const Matrix<const T>& C, const Vector<const double>& a, const Vector<const double>& b,
                  const Vector<const T>& f, const Vector<const T>& g, double scale, double inv_eps,
                  const Matrix<T>& plan) {
  Kokkos::parallel_for(
      "kotml::ot::sinkhorn_plan",
      Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>>({0, 0}, {C.extent(0), C.extent(1)}),
      KOKKOS_LAMBDA(const std::int64_t i, const std::int64_t j) {
        const double w = a(i) * b(j) * scale;
        plan(i, j) = w > 0 ? static_cast<T>(w * kmath::exp((static_cast<double>(f(i)) + static_cast<double>(g(j)) -
                                                             static_cast<double>(C(i, j))) * inv_eps))
                           : T(0);
      });
}

}  // namespace

template <class T>
void sinkhorn_plan(const Matrix<const T>& C, const Vector<const double>& a, const Vector<const double>& b,
                   const Vector<const T>& f, const Vector<const T>& g, double epsilon, bool normalise,
                   const Matrix<T>& plan) {
  const auto n = static_cast<std::int64_t>(C.extent(0));
  const auto m = static_cast<std::int64_t>(C.extent(1));
  check_marginal(a, n, "a");
  check_marginal(b, m, "b");
  auto host_a = Kokkos::create_mirror_view_and_copy(HostSpace(), a);
  auto host_b = Kokkos::create_mirror_view_and_copy(HostSpace(), b);
  double sa = 0, sb = 0;
  for (std::int64_t i = 0; i < n; ++i) sa += host_a(i);
  for (std::int64_t j = 0; j < m; ++j) sb += host_b(j);
  const double ka = normalise ? 1.0 / sa : 1.0, kb = normalise ? 1.0 / sb : 1.0;
  plan_entries(C, a, b, f, g, ka * kb, 1.0 / epsilon, plan);
  Kokkos::fence();
}

#define KOTML_OT_INSTANTIATE_SINKHORN(T)                                                             \
  template struct SinkhornBatchResult<T>;                                                           \
  template SinkhornBatchResult<T> sinkhorn<T>(const CloudBatch<T>&, const std::vector<Pair>&, Cost,  \
                                              const SinkhornOptions&, const SinkhornWarmStart<T>*,  \
                                              SinkhornWorkspace<T>*);                               \
  template class DenseSinkhorn<T>;                                                                  \
  template void sinkhorn_plan<T>(const Matrix<const T>&, const Vector<const double>&,               \
                                 const Vector<const double>&, const Vector<const T>&,               \
                                 const Vector<const T>&, double, bool, const Matrix<T>&);

KOTML_OT_INSTANTIATE_SINKHORN(float)
KOTML_OT_INSTANTIATE_SINKHORN(double)

}  // namespace kotml::ot
