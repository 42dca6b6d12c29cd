#include "kotml/ot/network_simplex.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <type_traits>

#include "kotml/core/error.hpp"
#include "cost_rows.hpp"
#include "network_simplex_kernel.hpp"
#include "sinkhorn_engine.hpp"

namespace kotml::ot {

void EmdOptions::validate() const {
  if (max_iter < 1) throw Error::option("max-iter", "must be at least 1, got " + std::to_string(max_iter));
}

EmdSummary EmdBatchResult::summary(std::int64_t u) const {
  auto pick = [u](const auto& view) {
    typename std::decay_t<decltype(view)>::non_const_value_type value{};
    Kokkos::deep_copy(value, Kokkos::subview(view, u));
    return value;
  };
  EmdSummary s;
  s.cost = pick(cost);
  s.iterations = pick(iterations);
  s.plan_size = pick(plan_size);
  s.status = static_cast<SolveStatus>(pick(status));
  s.warm_started = pick(warm_started) != 0;
  return s;
}

std::vector<EmdSummary> EmdBatchResult::summaries() const {
  auto c = Kokkos::create_mirror_view_and_copy(HostSpace(), cost);
  auto it = Kokkos::create_mirror_view_and_copy(HostSpace(), iterations);
  auto ps = Kokkos::create_mirror_view_and_copy(HostSpace(), plan_size);
  auto st = Kokkos::create_mirror_view_and_copy(HostSpace(), status);
  auto ws = Kokkos::create_mirror_view_and_copy(HostSpace(), warm_started);
  std::vector<EmdSummary> all(c.extent(0));
  for (std::size_t u = 0; u < all.size(); ++u)
    all[u] = {c(u), it(u), ps(u), static_cast<SolveStatus>(st(u)), ws(u) != 0};
  return all;
}

std::vector<std::int32_t> EmdBatchResult::basis_of(std::int64_t u) const {
  const std::int64_t at = layout.node_offset(u);
  const std::int64_t count = layout.rows(u) + layout.cols(u);
  std::vector<std::int32_t> out(static_cast<std::size_t>(count));
  Kokkos::View<std::int32_t*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> host(out.data(), out.size());
  Kokkos::deep_copy(host, Kokkos::subview(basis, std::make_pair(at, at + count)));
  return out;
}

namespace {

using detail::SimplexWorkspace;

/// Node arrays of a set of problems, each problem's block starting at its node offset.
struct NodeArrays {
  Vector<double> supply, flow, pi;
  Vector<std::int32_t> parent, thread, rev_thread, succ, last, other_path, stem, stem_last, stem_prev, stem_after,
      stem_succ;
  Kokkos::View<std::int8_t*, MemSpace> up;

  void allocate(std::int64_t size) {
    auto ints = [size](const char* label) { return Vector<std::int32_t>(no_init(label), size); };
    auto reals = [size](const char* label) { return Vector<double>(no_init(label), size); };
    supply = reals("kotml::ot::emd_supply");
    flow = reals("kotml::ot::emd_flow");
    pi = reals("kotml::ot::emd_pi");
    parent = ints("kotml::ot::emd_parent");
    thread = ints("kotml::ot::emd_thread");
    rev_thread = ints("kotml::ot::emd_rev_thread");
    succ = ints("kotml::ot::emd_succ");
    last = ints("kotml::ot::emd_last");
    other_path = ints("kotml::ot::emd_other_path");
    stem = ints("kotml::ot::emd_stem");
    stem_last = ints("kotml::ot::emd_stem_last");
    stem_prev = ints("kotml::ot::emd_stem_prev");
    stem_after = ints("kotml::ot::emd_stem_after");
    stem_succ = ints("kotml::ot::emd_stem_succ");
    up = Kokkos::View<std::int8_t*, MemSpace>(no_init("kotml::ot::emd_up"), size);
  }

  KOKKOS_INLINE_FUNCTION SimplexWorkspace at(std::int64_t node_at, std::int32_t n, std::int32_t m,
                                             const double* cost, std::int8_t* state) const {
    SimplexWorkspace w;
    w.n = n;
    w.m = m;
    w.cost = cost;
    w.state = state;
    w.supply = supply.data() + node_at;
    w.flow = flow.data() + node_at;
    w.pi = pi.data() + node_at;
    w.parent = parent.data() + node_at;
    w.thread = thread.data() + node_at;
    w.rev_thread = rev_thread.data() + node_at;
    w.succ = succ.data() + node_at;
    w.last = last.data() + node_at;
    w.up = up.data() + node_at;
    w.other_path = other_path.data() + node_at;
    w.stem = stem.data() + node_at;
    w.stem_last = stem_last.data() + node_at;
    w.stem_prev = stem_prev.data() + node_at;
    w.stem_after = stem_after.data() + node_at;
    w.stem_succ = stem_succ.data() + node_at;
    return w;
  }
};

/// Columns of the per-slot table.
enum SlotField : int {
  f_problem,
  f_rows_all,
  f_cols_all,
  f_rows,
  f_cols,
  f_arc_at,
  f_node_at,
  f_source_active,   // offset of the source cloud's compact → local map
  f_target_active,
  f_source_compact,  // offset of the source cloud's local → compact map
  f_target_compact,
  f_source_point,
  f_target_point,
  f_source_weight,
  f_target_weight,
  f_row_out,   // layout.row_offset[u]
  f_col_out,   // layout.col_offset[u]
  slot_fields
};

using SlotView = Kokkos::View<std::int64_t**, Kokkos::LayoutRight, MemSpace>;

/// The cost between original point i of the source and j of the target.
template <class T>
struct PointCost {
  Matrix<const T> points;
  Vector<const double> norms;
  std::int64_t source = 0, target = 0;
  Cost kind = Cost::euclidean;

  KOKKOS_INLINE_FUNCTION double operator()(std::int32_t i, std::int32_t j) const {
    const std::int64_t x = source + i, y = target + j;
    const bool cosine = kind == Cost::cosine;
    return ground_cost<double>(kind, &points(x, 0), &points(y, 0), static_cast<int>(points.extent(1)),
                               cosine ? norms(x) : 0.0, cosine ? norms(y) : 0.0);
  }
};

/// Costs of each slot's compact problem, one team per block of compact rows.
template <class T>
struct EmdCosts {
  detail::BlockList blocks;
  SlotView slots;
  Vector<double> cost;
  Vector<const std::int32_t> active;
  Matrix<const T> points;
  Vector<const double> norms;
  Cost kind;

  KOKKOS_INLINE_FUNCTION void operator()(const detail::LineMember& team) const {
    const std::int64_t s = blocks(team.league_rank(), 0);
    const std::int64_t m = slots(s, f_cols);
    const std::int32_t* rows = active.data() + slots(s, f_source_active);
    const std::int32_t* cols = active.data() + slots(s, f_target_active);
    double* base = cost.data() + slots(s, f_arc_at);
    const std::int64_t source = slots(s, f_source_point);
    const std::int64_t target = slots(s, f_target_point);
    const auto target_of = [=](const std::int64_t j) { return target + cols[j]; };
    Kokkos::parallel_for(
        Kokkos::TeamThreadRange(team, blocks(team.league_rank(), 1), blocks(team.league_rank(), 2)),
        [&](const std::int64_t i) {
          double* row = base + i * m;
          detail::cost_row(team, kind, points, source + rows[i], target_of, m, norms,
                           [&](const std::int64_t j, const double v) { row[j] = v; });
        });
  }
};

/// Lays one problem's scratch out from `base` in a team's scratch pad (host
/// backends): the costs, the node arrays and the arc states, each rounded up to
/// 8 bytes. Returns the bytes used; with base = nullptr it only measures.
KOKKOS_INLINE_FUNCTION std::size_t lay_out_pad(char* base, std::int64_t arcs, std::int64_t nodes,
                                               SimplexWorkspace& w) {
  std::size_t used = 0;
  auto take = [&](std::size_t bytes) {
    char* at = base ? base + used : nullptr;
    used += (bytes + 7) / 8 * 8;
    return at;
  };
  const auto node_count = static_cast<std::size_t>(nodes), arc_count = static_cast<std::size_t>(arcs);
  auto reals = [&]() { return reinterpret_cast<double*>(take(node_count * sizeof(double))); };
  auto ints = [&]() { return reinterpret_cast<std::int32_t*>(take(node_count * sizeof(std::int32_t))); };
  w.cost = reinterpret_cast<double*>(take(arc_count * sizeof(double)));
  w.supply = reals();
  w.flow = reals();
  w.pi = reals();
  w.parent = ints();
  w.thread = ints();
  w.rev_thread = ints();
  w.succ = ints();
  w.last = ints();
  w.other_path = ints();
  w.stem = ints();
  w.stem_last = ints();
  w.stem_prev = ints();
  w.stem_after = ints();
  w.stem_succ = ints();
  w.up = reinterpret_cast<std::int8_t*>(take(node_count));
  w.state = reinterpret_cast<std::int8_t*>(take(arc_count));
  return used;
}

inline std::size_t scratch_bytes(std::int64_t arcs, std::int64_t nodes) {
  SimplexWorkspace measured;
  return lay_out_pad(nullptr, arcs, nodes, measured);
}

/// Solves each slot's problem: supplies, warm or cold tree, pivots, results.
///
/// On GPUs one thread solves one problem on costs the EmdCosts kernel stored
/// for the whole chunk. On host backends (the team operator) each one-thread
/// team computes its problem's costs itself into its own scratch pad, right
/// before the solve: the costs are then still in cache when the pricing scans
/// them, and the scratch is one problem per thread, reused from launch to
/// launch, instead of every problem of the batch.
template <class T>
struct EmdSolve {
  using TeamMember = Kokkos::TeamPolicy<ExecSpace, Kokkos::Schedule<Kokkos::Dynamic>>::member_type;

  Vector<const std::int64_t> order;  // slots, largest first
  SlotView slots;
  Vector<const double> cost;
  Kokkos::View<std::int8_t*, MemSpace> state;
  NodeArrays nodes;
  Vector<const std::int32_t> active, compact;
  Vector<const double> weights;
  Vector<const std::int32_t> warm;  // empty: cold starts
  std::int64_t max_iter;
  // Outputs (indexed by problem, or by the layout's offsets).
  Vector<double> out_cost;
  Vector<std::int32_t> out_status, out_warm, plan_size, plan_row, plan_col, basis;
  Vector<std::int64_t> out_iterations;
  Vector<double> plan_value, f, g;
  Matrix<const T> points;
  Matrix<const double> points_t;  // the pool, coordinate-major (host costs)
  Vector<const double> norms;
  Cost kind;

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t k) const {
    const std::int64_t s = order(k);
    const auto n = static_cast<std::int32_t>(slots(s, f_rows));
    const auto m = static_cast<std::int32_t>(slots(s, f_cols));
    solve(s, nodes.at(slots(s, f_node_at), n, m, cost.data() + slots(s, f_arc_at), state.data() + slots(s, f_arc_at)));
  }

  KOKKOS_INLINE_FUNCTION void operator()(const TeamMember& team) const {
#ifndef KOTML_DEVICE_PASS
    const std::int64_t s = order(team.league_rank());
    const auto n = static_cast<std::int32_t>(slots(s, f_rows));
    const auto m = static_cast<std::int32_t>(slots(s, f_cols));
    const std::int64_t arcs = static_cast<std::int64_t>(n) * m, count = n + m + 1;
    SimplexWorkspace w;
    w.n = n;
    w.m = m;
    char* pad = static_cast<char*>(team.team_scratch(1).get_shmem(scratch_bytes(arcs, count)));
    lay_out_pad(pad, arcs, count, w);
    host_costs(s, reinterpret_cast<double*>(pad));  // the costs open the pad (w.cost)
    solve(s, w);
#else
    (void)team;
#endif
  }

  /// The compact problem's costs, row by row (host only).
  void host_costs(std::int64_t s, double* c) const {
    const auto n = static_cast<std::int32_t>(slots(s, f_rows));
    const auto m = static_cast<std::int32_t>(slots(s, f_cols));
    const std::int32_t* rows = active.data() + slots(s, f_source_active);
    const std::int32_t* cols = active.data() + slots(s, f_target_active);
    const std::int64_t source = slots(s, f_source_point), target = slots(s, f_target_point);
    const bool cosine = kind == Cost::cosine;
    const int dim = static_cast<int>(points.extent(1));
    // Every target active: consecutive pool rows, read by the SIMD kernel.
    const bool consecutive = m == slots(s, f_cols_all);
    const std::int64_t stride = static_cast<std::int64_t>(points_t.extent(1));
    for (std::int32_t i = 0; i < n; ++i) {
      const std::int64_t x = source + rows[i];
      double* row = c + static_cast<std::int64_t>(i) * m;
      if (consecutive) {
        detail::cost_row_host(kind, points_t.data() + x, points_t.data() + target, stride, dim, m,
                              cosine ? norms(x) : 0.0, cosine ? norms.data() + target : nullptr, row, false);
      } else {
        for (std::int32_t j = 0; j < m; ++j) {
          const std::int64_t y = target + cols[j];
          row[j] = ground_cost<double>(kind, &points(x, 0), &points(y, 0), dim, cosine ? norms(x) : 0.0,
                                       cosine ? norms(y) : 0.0);
        }
      }
    }
  }

  KOKKOS_INLINE_FUNCTION void solve(const std::int64_t s, SimplexWorkspace w) const {
    const std::int32_t n = w.n, m = w.m;
    const auto n_all = static_cast<std::int32_t>(slots(s, f_rows_all));
    const auto m_all = static_cast<std::int32_t>(slots(s, f_cols_all));
    const std::int64_t u = slots(s, f_problem);
    const std::int32_t* active_row = active.data() + slots(s, f_source_active);
    const std::int32_t* active_col = active.data() + slots(s, f_target_active);
    const std::int32_t* compact_row = compact.data() + slots(s, f_source_compact);
    const std::int32_t* compact_col = compact.data() + slots(s, f_target_compact);
    const double* w_row = weights.data() + slots(s, f_source_weight);
    const double* w_col = weights.data() + slots(s, f_target_weight);

    // Supplies normalised to unit mass per side; the root absorbs rounding.
    double sum_a = 0, sum_b = 0;
    for (std::int32_t i = 0; i < n; ++i) sum_a += w_row[active_row[i]];
    for (std::int32_t j = 0; j < m; ++j) sum_b += w_col[active_col[j]];
    double net = 0;
    for (std::int32_t i = 0; i < n; ++i) {
      w.supply[i] = w_row[active_row[i]] / sum_a;
      net += w.supply[i];
    }
    for (std::int32_t j = 0; j < m; ++j) {
      w.supply[n + j] = -(w_col[active_col[j]] / sum_b);
      net += w.supply[n + j];
    }
    w.supply[n + m] = -net;

    detail::NetworkSimplex simplex(w);
    std::int32_t* parents = w.stem_succ;
    const std::int64_t out_at = slots(s, f_row_out) + slots(s, f_col_out);
    bool warm_used = false;
    if (warm.extent(0) > 0 &&
        detail::map_basis(warm.data() + out_at, n_all, m_all, n, m, active_row, active_col, compact_row,
                          compact_col, parents))
      warm_used = simplex.init_tree(parents);
    if (!warm_used) {
      for (std::int32_t x = 0; x < n + m; ++x) parents[x] = simplex.root();
      simplex.init_tree(parents);
    }
    std::int64_t pivots = 0;
    const SolveStatus st = simplex.run(max_iter, pivots);

    double transport = 0;
    const PointCost<T> cost_of{points, norms, slots(s, f_source_point), slots(s, f_target_point), kind};
    const std::int32_t size = detail::extract_solution(
        w, n_all, m_all, active_row, active_col, compact_row, compact_col, cost_of, plan_row.data() + out_at,
        plan_col.data() + out_at, plan_value.data() + out_at, transport, f.data() + slots(s, f_row_out),
        g.data() + slots(s, f_col_out), basis.data() + out_at);
    out_cost(u) = transport;
    out_status(u) = static_cast<std::int32_t>(st);
    out_iterations(u) = pivots;
    out_warm(u) = warm_used ? 1 : 0;
    plan_size(u) = size;
  }
};

/// ∂W/∂(projected points) from the sparse plan, entry by entry in plan order.
template <class T>
struct EmdGradients {
  SlotView slots;
  Vector<const std::int32_t> plan_size, plan_row, plan_col;
  Vector<const double> plan_value;
  Matrix<const T> points;
  Matrix<double> source_gradient, target_gradient;
  bool squared;

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t s) const {
    const std::int64_t u = slots(s, f_problem);
    const std::int64_t rows = slots(s, f_row_out), cols = slots(s, f_col_out);
    const std::int64_t src = slots(s, f_source_point), tgt = slots(s, f_target_point);
    const int dim = static_cast<int>(points.extent(1));
    for (std::int64_t i = 0; i < slots(s, f_rows_all); ++i)
      for (int k = 0; k < dim; ++k) source_gradient(rows + i, k) = 0;
    for (std::int64_t j = 0; j < slots(s, f_cols_all); ++j)
      for (int k = 0; k < dim; ++k) target_gradient(cols + j, k) = 0;
    const std::int64_t at = rows + cols;
    for (std::int32_t e = 0; e < plan_size(u); ++e) {
      const std::int64_t i = plan_row(at + e), j = plan_col(at + e);
      const double value = plan_value(at + e);
      double weight;
      if (squared) {
        weight = 2 * value;
      } else {
        const double d = ground_cost<double>(Cost::euclidean, &points(src + i, 0), &points(tgt + j, 0), dim, 0.0, 0.0);
        weight = d > 0 ? value / d : 0.0;
      }
      if (weight == 0) continue;
      for (int k = 0; k < dim; ++k) {
        const double diff = static_cast<double>(points(src + i, k)) - static_cast<double>(points(tgt + j, k));
        source_gradient(rows + i, k) += weight * diff;
        target_gradient(cols + j, k) -= weight * diff;
      }
    }
  }
};

}  // namespace

template <class T>
EmdBatchResult emd(const CloudBatch<T>& clouds, const std::vector<Pair>& pairs, Cost cost,
                   const EmdOptions& options, const Vector<const std::int32_t>& warm_basis) {
  options.validate();
  if (options.point_gradients && cost == Cost::cosine)
    throw Error::option("cost", "gradients with respect to the points are available for the euclidean "
                                "and sqeuclidean costs, not cosine");
  EmdBatchResult result;
  result.layout = BatchLayout::of(clouds, pairs);
  const BatchLayout& layout = result.layout;
  const std::int64_t n_problems = layout.problems();
  const std::int64_t nodes_total = layout.total_rows() + layout.total_cols();
  if (warm_basis.extent(0) > 0 && static_cast<std::int64_t>(warm_basis.extent(0)) != nodes_total)
    throw Error("", "warm start", "the basis has " + std::to_string(warm_basis.extent(0)) +
                                      " entries but the batch has " + std::to_string(nodes_total) + " nodes");

  result.cost = Vector<double>("kotml::ot::emd_cost", n_problems);
  result.status = Vector<std::int32_t>("kotml::ot::emd_status", n_problems);
  result.iterations = Vector<std::int64_t>("kotml::ot::emd_iterations", n_problems);
  result.warm_started = Vector<std::int32_t>("kotml::ot::emd_warm_started", n_problems);
  result.plan_size = Vector<std::int32_t>("kotml::ot::emd_plan_size", n_problems);
  result.f = Vector<double>("kotml::ot::emd_f", layout.total_rows());
  result.g = Vector<double>("kotml::ot::emd_g", layout.total_cols());
  result.plan_row = Vector<std::int32_t>("kotml::ot::emd_plan_row", nodes_total);
  result.plan_col = Vector<std::int32_t>("kotml::ot::emd_plan_col", nodes_total);
  result.plan_value = Vector<double>("kotml::ot::emd_plan_value", nodes_total);
  result.basis = Vector<std::int32_t>("kotml::ot::emd_basis", nodes_total);
  if (options.point_gradients) {
    result.source_gradient = Matrix<double>("kotml::ot::emd_source_gradient", layout.total_rows(), clouds.dim());
    result.target_gradient = Matrix<double>("kotml::ot::emd_target_gradient", layout.total_cols(), clouds.dim());
  }
  if (n_problems == 0) return result;

  // Active (positive-weight) points of every cloud, and the inverse maps.
  auto weights_host = Kokkos::create_mirror_view_and_copy(HostSpace(), clouds.weights());
  std::vector<std::int64_t> active_at(static_cast<std::size_t>(clouds.count())),
      compact_at(static_cast<std::size_t>(clouds.count()));
  std::vector<std::int32_t> active_count(static_cast<std::size_t>(clouds.count()));
  std::vector<std::int32_t> active, compact;
  for (std::int32_t c = 0; c < clouds.count(); ++c) {
    const CloudRange& r = clouds.cloud(c);
    active_at[static_cast<std::size_t>(c)] = static_cast<std::int64_t>(active.size());
    compact_at[static_cast<std::size_t>(c)] = static_cast<std::int64_t>(compact.size());
    std::int32_t count = 0;
    for (std::int64_t i = 0; i < r.size; ++i) {
      if (weights_host(r.weight_begin + i) > 0) {
        compact.push_back(count++);
        active.push_back(static_cast<std::int32_t>(i));
      } else {
        compact.push_back(-1);
      }
    }
    active_count[static_cast<std::size_t>(c)] = count;
  }
  const auto active_device = device_copy_of<Vector<std::int32_t>>(active, "kotml::ot::emd_active");
  const auto compact_device = device_copy_of<Vector<std::int32_t>>(compact, "kotml::ot::emd_compact");
  const detail::PoolViews pool = detail::pool_views<T>(clouds.points(), cost);
  const Vector<double>& norms = pool.norms;
  const Matrix<double>& points_t = pool.points_t;

  // Chunks of consecutive problems whose scratch fits the workspace.
  auto arcs_of = [&](std::int64_t u) {
    const auto& p = pairs[static_cast<std::size_t>(u)];
    return static_cast<std::int64_t>(active_count[static_cast<std::size_t>(p.source)]) *
           active_count[static_cast<std::size_t>(p.target)];
  };
  auto nodes_of = [&](std::int64_t u) {
    const auto& p = pairs[static_cast<std::size_t>(u)];
    return static_cast<std::int64_t>(active_count[static_cast<std::size_t>(p.source)]) +
           active_count[static_cast<std::size_t>(p.target)] + 1;
  };
  constexpr std::size_t bytes_per_arc = sizeof(double) + sizeof(std::int8_t);
  constexpr std::size_t bytes_per_node = 3 * sizeof(double) + 11 * sizeof(std::int32_t) + 1;
  std::vector<std::pair<std::int64_t, std::int64_t>> chunks;
  std::int64_t most_arcs = 0, most_nodes = 0;
  // Host backends compute each problem's costs in the solving thread's scratch
  // pad (EmdSolve's team operator), when a pad per thread fits the workspace.
  std::int64_t largest_arcs = 0, largest_nodes = 0;
  for (std::int64_t u = 0; u < n_problems; ++u) {
    largest_arcs = std::max(largest_arcs, arcs_of(u));
    largest_nodes = std::max(largest_nodes, nodes_of(u));
  }
  const std::size_t pad_bytes = scratch_bytes(largest_arcs, largest_nodes);
  const bool fused = std::is_same<ExecSpace::memory_space, HostSpace>::value &&
                     pad_bytes * static_cast<std::size_t>(ExecSpace().concurrency()) <= options.workspace_bytes &&
                     pad_bytes <= static_cast<std::size_t>(std::numeric_limits<int>::max());
  if (fused) chunks.emplace_back(0, n_problems);
  for (std::int64_t u = fused ? n_problems : 0; u < n_problems;) {
    std::int64_t v = u, arcs = 0, nodes = 0;
    while (v < n_problems) {
      const std::int64_t a = arcs_of(v), b = nodes_of(v);
      if (v > u && static_cast<std::size_t>(arcs + a) * bytes_per_arc +
                           static_cast<std::size_t>(nodes + b) * bytes_per_node >
                       options.workspace_bytes)
        break;
      arcs += a;
      nodes += b;
      ++v;
    }
    chunks.emplace_back(u, v);
    most_arcs = std::max(most_arcs, arcs);
    most_nodes = std::max(most_nodes, nodes);
    u = v;
  }
  Vector<double> cost_buffer(no_init("kotml::ot::emd_cost_buffer"), static_cast<std::size_t>(most_arcs));
  Kokkos::View<std::int8_t*, MemSpace> state_buffer(no_init("kotml::ot::emd_state"),
                                                    static_cast<std::size_t>(most_arcs));
  NodeArrays nodes;
  nodes.allocate(most_nodes);

  for (const auto& [first, last] : chunks) {
    const std::int64_t count = last - first;
    std::vector<std::int64_t> table(static_cast<std::size_t>(count * slot_fields));
    detail::SlotTable shape;  // for row blocks of the cost kernel
    std::int64_t arc_at = 0, node_at = 0;
    for (std::int64_t k = 0; k < count; ++k) {
      const std::int64_t u = first + k;
      const Pair& p = pairs[static_cast<std::size_t>(u)];
      const auto src = static_cast<std::size_t>(p.source), tgt = static_cast<std::size_t>(p.target);
      std::int64_t* row = &table[static_cast<std::size_t>(k * slot_fields)];
      row[f_problem] = u;
      row[f_rows_all] = clouds.cloud(p.source).size;
      row[f_cols_all] = clouds.cloud(p.target).size;
      row[f_rows] = active_count[src];
      row[f_cols] = active_count[tgt];
      row[f_arc_at] = arc_at;
      row[f_node_at] = node_at;
      row[f_source_active] = active_at[src];
      row[f_target_active] = active_at[tgt];
      row[f_source_compact] = compact_at[src];
      row[f_target_compact] = compact_at[tgt];
      row[f_source_point] = clouds.cloud(p.source).point_begin;
      row[f_target_point] = clouds.cloud(p.target).point_begin;
      row[f_source_weight] = clouds.cloud(p.source).weight_begin;
      row[f_target_weight] = clouds.cloud(p.target).weight_begin;
      row[f_row_out] = layout.row_offset[u];
      row[f_col_out] = layout.col_offset[u];
      shape.add(u, arc_at, 0, 0, active_count[src], active_count[tgt]);
      arc_at += arcs_of(u);
      node_at += nodes_of(u);
    }
    SlotView slots(no_init("kotml::ot::emd_slots"), count, slot_fields);
    auto slots_host = Kokkos::create_mirror_view(slots);
    for (std::int64_t k = 0; k < count; ++k)
      for (int c = 0; c < slot_fields; ++c) slots_host(k, c) = table[static_cast<std::size_t>(k * slot_fields + c)];
    Kokkos::deep_copy(slots, slots_host);

    std::vector<std::int64_t> members(static_cast<std::size_t>(count));
    std::iota(members.begin(), members.end(), 0);
    if (!fused) {
      auto blocks = detail::make_blocks(shape, members, true);
      Kokkos::parallel_for("kotml::ot::emd_costs", detail::line_policy(blocks.extent(0)),
                           EmdCosts<T>{blocks, slots, cost_buffer, active_device, clouds.points(), norms, cost});
    }

    // Largest problems first, so that the dynamic schedule ends evenly.
    const std::int64_t chunk_begin = first;  // lambdas capture structured bindings only from C++20
    std::stable_sort(members.begin(), members.end(), [&](std::int64_t x, std::int64_t y) {
      return arcs_of(chunk_begin + x) > arcs_of(chunk_begin + y);
    });
    const auto order = device_copy_of<Vector<std::int64_t>>(members, "kotml::ot::emd_order");
    const EmdSolve<T> solve{order,          slots,          cost_buffer,          state_buffer,
                            nodes,          active_device,  compact_device,       clouds.weights(),
                            warm_basis,     options.max_iter, result.cost,        result.status,
                            result.warm_started, result.plan_size, result.plan_row, result.plan_col,
                            result.basis,   result.iterations, result.plan_value, result.f,
                            result.g,       clouds.points(), points_t,            norms,
                            cost};
    if (fused)
      Kokkos::parallel_for(
          "kotml::ot::emd_costs_and_solve",
          Kokkos::TeamPolicy<ExecSpace, Kokkos::Schedule<Kokkos::Dynamic>>(count, 1)
              .set_scratch_size(1, Kokkos::PerTeam(static_cast<int>(pad_bytes))),
          solve);
    else
      Kokkos::parallel_for("kotml::ot::emd_solve",
                           Kokkos::RangePolicy<ExecSpace, Kokkos::Schedule<Kokkos::Dynamic>>(0, count), solve);
    if (options.point_gradients)
      Kokkos::parallel_for("kotml::ot::emd_gradients", Kokkos::RangePolicy<ExecSpace>(0, count),
                           EmdGradients<T>{slots, result.plan_size, result.plan_row, result.plan_col,
                                           result.plan_value, clouds.points(), result.source_gradient,
                                           result.target_gradient, cost == Cost::sqeuclidean});
  }
  Kokkos::fence();
  return result;
}

// ------------------------------------------------------------------- dense

namespace {

struct DenseCost {
  const HostMatrix<const double>* C;
  // Host-only data, but callable from the shared (host and device) simplex code.
  KOKKOS_INLINE_FUNCTION double operator()(std::int32_t i, std::int32_t j) const { return (*C)(i, j); }
};

}  // namespace

EmdSolution emd_dense(const HostMatrix<const double>& C, const std::vector<double>& a,
                      const std::vector<double>& b, const EmdOptions& options,
                      const std::vector<std::int32_t>& warm_basis) {
  options.validate();
  const auto n_all = static_cast<std::int32_t>(C.extent(0));
  const auto m_all = static_cast<std::int32_t>(C.extent(1));
  if (n_all == 0 || m_all == 0) throw Error("", "cost", "the cost matrix is empty");
  if (static_cast<std::int32_t>(a.size()) != n_all || static_cast<std::int32_t>(b.size()) != m_all)
    throw Error("", "weights", "a and b must have one entry per row and per column of the cost");
  if (!warm_basis.empty() && static_cast<std::int32_t>(warm_basis.size()) != n_all + m_all)
    throw Error("", "warm start", "the basis must have n + m entries");
  double sum_a = 0, sum_b = 0;
  for (double x : a) {
    if (!std::isfinite(x) || x < 0) throw Error("", "a", "weights must be finite and non-negative");
    sum_a += x;
  }
  for (double x : b) {
    if (!std::isfinite(x) || x < 0) throw Error("", "b", "weights must be finite and non-negative");
    sum_b += x;
  }
  if (!(sum_a > 0) || !(sum_b > 0)) throw Error("", "weights", "the weights of each side must have a positive sum");
  for (std::int32_t i = 0; i < n_all; ++i)
    for (std::int32_t j = 0; j < m_all; ++j)
      if (!std::isfinite(C(i, j))) throw Error("", "cost", "the cost matrix holds a non-finite value");

  std::vector<std::int32_t> active_row, active_col, compact_row(static_cast<std::size_t>(n_all), -1),
      compact_col(static_cast<std::size_t>(m_all), -1);
  for (std::int32_t i = 0; i < n_all; ++i)
    if (a[static_cast<std::size_t>(i)] > 0) {
      compact_row[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(active_row.size());
      active_row.push_back(i);
    }
  for (std::int32_t j = 0; j < m_all; ++j)
    if (b[static_cast<std::size_t>(j)] > 0) {
      compact_col[static_cast<std::size_t>(j)] = static_cast<std::int32_t>(active_col.size());
      active_col.push_back(j);
    }
  const auto n = static_cast<std::int32_t>(active_row.size());
  const auto m = static_cast<std::int32_t>(active_col.size());
  std::vector<double> cost(static_cast<std::size_t>(n) * static_cast<std::size_t>(m));
  for (std::int32_t i = 0; i < n; ++i)
    for (std::int32_t j = 0; j < m; ++j)
      cost[static_cast<std::size_t>(i) * static_cast<std::size_t>(m) + static_cast<std::size_t>(j)] =
          C(active_row[static_cast<std::size_t>(i)], active_col[static_cast<std::size_t>(j)]);
  std::vector<std::int8_t> state(cost.size());
  const std::size_t N = static_cast<std::size_t>(n + m + 1);
  std::vector<double> supply(N), flow(N), pi(N);
  std::vector<std::int32_t> ints(11 * N);
  std::vector<std::int8_t> up(N);
  SimplexWorkspace w;
  w.n = n;
  w.m = m;
  w.cost = cost.data();
  w.state = state.data();
  w.supply = supply.data();
  w.flow = flow.data();
  w.pi = pi.data();
  w.parent = ints.data();
  w.thread = ints.data() + N;
  w.rev_thread = ints.data() + 2 * N;
  w.succ = ints.data() + 3 * N;
  w.last = ints.data() + 4 * N;
  w.stem = ints.data() + 5 * N;
  w.stem_last = ints.data() + 6 * N;
  w.stem_prev = ints.data() + 7 * N;
  w.stem_after = ints.data() + 8 * N;
  w.stem_succ = ints.data() + 9 * N;
  w.other_path = ints.data() + 10 * N;
  w.up = up.data();
  double net = 0;
  for (std::int32_t i = 0; i < n; ++i) {
    supply[static_cast<std::size_t>(i)] = a[static_cast<std::size_t>(active_row[static_cast<std::size_t>(i)])] / sum_a;
    net += supply[static_cast<std::size_t>(i)];
  }
  for (std::int32_t j = 0; j < m; ++j) {
    supply[static_cast<std::size_t>(n + j)] =
        -(b[static_cast<std::size_t>(active_col[static_cast<std::size_t>(j)])] / sum_b);
    net += supply[static_cast<std::size_t>(n + j)];
  }
  supply[static_cast<std::size_t>(n + m)] = -net;

  detail::NetworkSimplex simplex(w);
  EmdSolution out;
  if (!warm_basis.empty() &&
      detail::map_basis(warm_basis.data(), n_all, m_all, n, m, active_row.data(), active_col.data(),
                        compact_row.data(), compact_col.data(), w.stem_succ))
    out.summary.warm_started = simplex.init_tree(w.stem_succ);
  if (!out.summary.warm_started) {
    for (std::int32_t x = 0; x < n + m; ++x) w.stem_succ[x] = simplex.root();
    simplex.init_tree(w.stem_succ);
  }
  out.summary.status = simplex.run(options.max_iter, out.summary.iterations);
  const std::size_t capacity = static_cast<std::size_t>(n_all + m_all);
  out.plan_row.resize(capacity);
  out.plan_col.resize(capacity);
  out.plan_value.resize(capacity);
  out.f.resize(static_cast<std::size_t>(n_all));
  out.g.resize(static_cast<std::size_t>(m_all));
  out.basis.resize(capacity);
  const std::int32_t size = detail::extract_solution(
      w, n_all, m_all, active_row.data(), active_col.data(), compact_row.data(), compact_col.data(),
      DenseCost{&C}, out.plan_row.data(), out.plan_col.data(), out.plan_value.data(), out.summary.cost,
      out.f.data(), out.g.data(), out.basis.data());
  out.plan_row.resize(static_cast<std::size_t>(size));
  out.plan_col.resize(static_cast<std::size_t>(size));
  out.plan_value.resize(static_cast<std::size_t>(size));
  out.summary.plan_size = size;
  return out;
}

template EmdBatchResult emd<float>(const CloudBatch<float>&, const std::vector<Pair>&, Cost, const EmdOptions&,
                                   const Vector<const std::int32_t>&);
template EmdBatchResult emd<double>(const CloudBatch<double>&, const std::vector<Pair>&, Cost,
                                    const EmdOptions&, const Vector<const std::int32_t>&);

}  // namespace kotml::ot
