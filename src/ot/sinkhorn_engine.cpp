#include "sinkhorn_engine.hpp"

#include "cost_rows.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <type_traits>

namespace kotml::ot::detail {

LinePolicy line_policy(std::int64_t blocks) {
  if constexpr (std::is_same<ExecSpace::memory_space, HostSpace>::value)
    return LinePolicy(static_cast<int>(blocks), 1, 1);
  else
    return LinePolicy(static_cast<int>(blocks), Kokkos::AUTO, 32);
}

void SlotTable::add(std::int64_t problem_id, std::int64_t cost_at, std::int64_t row_at,
                    std::int64_t col_at, std::int64_t n, std::int64_t m, std::int64_t source_at,
                    std::int64_t target_at) {
  problem.push_back(problem_id);
  cost_offset.push_back(cost_at);
  row_begin.push_back(row_at);
  col_begin.push_back(col_at);
  rows.push_back(n);
  cols.push_back(m);
  source_point.push_back(source_at);
  target_point.push_back(target_at);
}

namespace {

Vector<std::int64_t> to_device(const std::vector<std::int64_t>& host, const char* label) {
  Vector<std::int64_t> v(no_init(label), host.size());
  Kokkos::deep_copy(v, Kokkos::View<const std::int64_t*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                           host.data(), host.size()));
  return v;
}

}  // namespace

void SlotTable::upload() {
  d_problem = to_device(problem, "kotml::ot::slot_problem");
  d_cost_offset = to_device(cost_offset, "kotml::ot::slot_cost_offset");
  d_row_begin = to_device(row_begin, "kotml::ot::slot_row_begin");
  d_col_begin = to_device(col_begin, "kotml::ot::slot_col_begin");
  d_rows = to_device(rows, "kotml::ot::slot_rows");
  d_cols = to_device(cols, "kotml::ot::slot_cols");
  d_source_point = to_device(source_point, "kotml::ot::slot_source_point");
  d_target_point = to_device(target_point, "kotml::ot::slot_target_point");
}

BlockList make_blocks(const SlotTable& slots, const std::vector<std::int64_t>& which, bool by_rows,
                      std::int64_t entries) {
  std::vector<std::int64_t> flat;
  for (const std::int64_t s : which) {
    const std::int64_t lines = by_rows ? slots.rows[s] : slots.cols[s];
    const std::int64_t length = std::max<std::int64_t>(1, by_rows ? slots.cols[s] : slots.rows[s]);
    const std::int64_t per_block = std::clamp<std::int64_t>((entries + length - 1) / length, 1,
                                                            std::max<std::int64_t>(lines, 1));
    for (std::int64_t begin = 0; begin < lines; begin += per_block) {
      flat.push_back(s);
      flat.push_back(begin);
      flat.push_back(std::min(lines, begin + per_block));
    }
  }
  return block_list(flat, "kotml::ot::line_blocks");
}

BlockList block_list(const std::vector<std::int64_t>& flat, const char* label) {
  BlockList blocks(no_init(label), flat.size() / 3);
  auto host = Kokkos::create_mirror_view(blocks);
  for (std::size_t b = 0; b < flat.size() / 3; ++b)
    for (int k = 0; k < 3; ++k) host(b, k) = flat[3 * b + static_cast<std::size_t>(k)];
  Kokkos::deep_copy(blocks, host);
  return blocks;
}

template <class T>
void SinkhornState<T>::allocate(std::int64_t rows, std::int64_t cols) {
  a = Vector<T>(no_init("kotml::ot::sinkhorn_a"), rows);
  log_a = Vector<T>(no_init("kotml::ot::sinkhorn_log_a"), rows);
  f = Vector<T>("kotml::ot::sinkhorn_f", rows);
  fa = Vector<T>(no_init("kotml::ot::sinkhorn_fa"), rows);
  lse_row = Vector<T>(no_init("kotml::ot::sinkhorn_lse_row"), rows);
  b = Vector<T>(no_init("kotml::ot::sinkhorn_b"), cols);
  log_b = Vector<T>(no_init("kotml::ot::sinkhorn_log_b"), cols);
  g = Vector<T>("kotml::ot::sinkhorn_g", cols);
  gb = Vector<T>(no_init("kotml::ot::sinkhorn_gb"), cols);
  lse_col = Vector<T>(no_init("kotml::ot::sinkhorn_lse_col"), cols);
  row_err = Vector<double>("kotml::ot::sinkhorn_row_err", rows);
  row_cost = Vector<double>("kotml::ot::sinkhorn_row_cost", rows);
}

void SinkhornOutputs::allocate(std::int64_t problems) {
  cost = Vector<double>("kotml::ot::sinkhorn_cost", problems);
  objective = Vector<double>("kotml::ot::sinkhorn_objective", problems);
  marginal_error = Vector<double>("kotml::ot::sinkhorn_marginal_error", problems);
  iterations = Vector<std::int32_t>("kotml::ot::sinkhorn_iterations", problems);
  status = Vector<std::int32_t>("kotml::ot::sinkhorn_status", problems);
  scaling_domain = Vector<std::int32_t>("kotml::ot::sinkhorn_scaling_domain", problems);
}

// ------------------------------------------------------------------- kernels

/// The arrays one half-step reads and writes: lines (rows of `cost`) of one
/// side, h the other side's scaled potential.
template <class T>
struct SideArrays {
  Vector<const T> cost;
  Vector<const std::int64_t> line_begin, other_begin, other_count;
  Vector<const T> other_scaled, weight, log_weight;
  Vector<T> potential, scaled;
  T tau;
};

/// One line of a half-step (called by one team thread):
///   pot ← −τ ε LSE_j(h_j − c_j/ε),  scaled ← pot/ε + log w.
/// With `check`, also stores the line's change of marginal,
///   w·|exp(pot_old/ε + LSE) − exp(pot_new/ε + LSE)|.
/// The batched (row-block) and the team-per-problem paths both go through this
/// function, so they compute the same bits.
template <class T>
KOKKOS_INLINE_FUNCTION void update_line(const LineMember& team, const SideArrays<T>& side, const T* row,
                                        const T* h, std::int64_t length, std::int64_t r, T epsilon,
                                        T inv_epsilon, bool check, const Vector<double>& line_err) {
  // The previous update gave pot = −τ ε LSE: its LSE is the guess.
  const T guess = -side.potential(r) * inv_epsilon / side.tau;
  const T lse = row_lse(team, row, h, length, inv_epsilon, guess);
  const T updated = -side.tau * epsilon * lse;
  Kokkos::single(Kokkos::PerThread(team), [&]() {
    if (check) {
      double change = 0;
      const double w = static_cast<double>(side.weight(r));
      if (w > 0) {
        const double s = static_cast<double>(inv_epsilon);
        change = w * kmath::fabs(kmath::exp(static_cast<double>(side.potential(r)) * s + lse) -
                                 kmath::exp(static_cast<double>(updated) * s + lse));
      }
      line_err(r) = change;
    }
    side.potential(r) = updated;
    side.scaled(r) = updated * inv_epsilon + side.log_weight(r);
  });
}

/// One half-step over the lines of the blocks (row-block path).
template <class T>
struct HalfStep {
  BlockList blocks;
  Vector<const std::int64_t> cost_offset;
  SideArrays<T> side;
  Vector<double> line_err;
  T epsilon, inv_epsilon;
  bool check;

  KOKKOS_INLINE_FUNCTION void operator()(const LineMember& team) const {
    const std::int64_t slot = blocks(team.league_rank(), 0);
    const std::int64_t length = side.other_count(slot);
    const T* base = side.cost.data() + cost_offset(slot);
    const T* h = side.other_scaled.data() + side.other_begin(slot);
    const std::int64_t at = side.line_begin(slot);
    Kokkos::parallel_for(
        Kokkos::TeamThreadRange(team, blocks(team.league_rank(), 1), blocks(team.league_rank(), 2)),
        [&](const std::int64_t i) {
          update_line(team, side, base + i * length, h, length, at + i, epsilon, inv_epsilon, check, line_err);
        });
  }
};

/// The whole iteration of one problem in one team (team-per-problem path), for
/// problems whose cost and transposed cost stay in a core's cache: no launch per
/// half-step, and both half-steps find their data where the last one left it.
/// Same updates, checks and stopping rule as the row-block path.
template <class T>
struct SolveInTeam {
  Vector<const std::int64_t> which;  // slots
  Vector<const std::int64_t> cost_offset;
  SideArrays<T> rows, cols;
  Vector<double> line_err;
  Vector<std::int32_t> iterations, status;  // per slot
  T epsilon, inv_epsilon;
  int max_iter, check_every;
  double tol;

  KOKKOS_INLINE_FUNCTION void operator()(const LineMember& team) const {
    const std::int64_t slot = which(team.league_rank());
    const std::int64_t n = cols.other_count(slot), m = rows.other_count(slot);
    const T* c = rows.cost.data() + cost_offset(slot);
    const T* ct = cols.cost.data() + cost_offset(slot);
    const T* gb = rows.other_scaled.data() + rows.other_begin(slot);
    const T* fa = cols.other_scaled.data() + cols.other_begin(slot);
    const std::int64_t row_at = rows.line_begin(slot), col_at = cols.line_begin(slot);
    int done = 0;
    std::int32_t outcome = static_cast<std::int32_t>(SolveStatus::max_iter);
    for (int it = 0; it < max_iter; ++it) {
      const bool check = it > 0 && it % check_every == 0;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n), [&](const std::int64_t i) {
        update_line(team, rows, c + i * m, gb, m, row_at + i, epsilon, inv_epsilon, check, line_err);
      });
      team.team_barrier();
      double err = 0;
      if (check)
        Kokkos::single(
            Kokkos::PerTeam(team),
            [&](double& total) {
              double sum = 0;
              for (std::int64_t i = 0; i < n; ++i) sum += line_err(row_at + i);
              total = sum;
            },
            err);
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, m), [&](const std::int64_t j) {
        update_line(team, cols, ct + j * n, fa, n, col_at + j, epsilon, inv_epsilon, false, line_err);
      });
      team.team_barrier();
      done = it + 1;
      if (check) {
        if (!kmath::isfinite(err)) {
          outcome = static_cast<std::int32_t>(SolveStatus::numerical_error);
          break;
        }
        if (err < tol) {
          outcome = static_cast<std::int32_t>(SolveStatus::optimal);
          break;
        }
      }
    }
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      iterations(slot) = done;
      status(slot) = outcome;
    });
  }
};

/// scaled ← pot/ε + log w over the lines of the blocks.
template <class T>
struct Rescale {
  BlockList blocks;
  Vector<const std::int64_t> line_begin;
  Vector<const T> potential, log_weight;
  Vector<T> scaled;
  T inv_epsilon;

  KOKKOS_INLINE_FUNCTION void operator()(const LineMember& team) const {
    const std::int64_t slot = blocks(team.league_rank(), 0);
    const std::int64_t at = line_begin(slot);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, blocks(team.league_rank(), 1),
                                                 blocks(team.league_rank(), 2)),
                         [&](const std::int64_t i) {
                           scaled(at + i) = potential(at + i) * inv_epsilon + log_weight(at + i);
                         });
  }
};

/// Per-slot sum of the line errors, in line order.
struct SumErrors {
  Vector<const std::int64_t> which, row_begin, rows;
  Vector<const double> line_err;
  Vector<double> slot_err;

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t k) const {
    const std::int64_t s = which(k);
    double sum = 0;
    for (std::int64_t i = 0; i < rows(s); ++i) sum += line_err(row_begin(s) + i);
    slot_err(s) = sum;
  }
};

/// Final pass over lines: the line's LSE, and for rows its part of <P,C>
/// (summed in column order) and, if asked, its row of the plan.
template <class T>
struct EvaluateLines {
  BlockList blocks;
  Vector<const T> cost;
  Vector<const std::int64_t> cost_offset, line_begin, other_begin, other_count;
  Vector<const T> scaled, other_scaled;
  Vector<T> lse;
  Vector<double> line_cost;  // empty for the column pass
  Vector<T> plan;            // empty unless plans are kept
  Vector<const std::int64_t> plan_offset, problem;
  Vector<const T> log_weight;
  T inv_epsilon, tau;

  KOKKOS_INLINE_FUNCTION void operator()(const LineMember& team) const {
    const std::int64_t slot = blocks(team.league_rank(), 0);
    const std::int64_t length = other_count(slot);
    const T* base = cost.data() + cost_offset(slot);
    const T* h = other_scaled.data() + other_begin(slot);
    const std::int64_t at = line_begin(slot);
    const bool with_cost = line_cost.extent(0) > 0;
    const bool with_plan = plan.extent(0) > 0;
    T* plan_base = with_plan ? plan.data() + plan_offset(problem(slot)) : nullptr;
    Kokkos::parallel_for(
        Kokkos::TeamThreadRange(team, blocks(team.league_rank(), 1), blocks(team.league_rank(), 2)),
        [&](const std::int64_t i) {
          const T* c = base + i * length;
          const T own = scaled(at + i);
          // own = pot/ε + log w, and the last update left pot = −τ ε LSE.
          const T guess = -(own - log_weight(at + i)) / tau;
          const T value = row_lse(team, c, h, length, inv_epsilon, guess);
          double part = 0;
          if (with_cost) {
#ifdef KOTML_DEVICE_PASS
            Kokkos::parallel_reduce(
                Kokkos::ThreadVectorRange(team, length),
                [&](const std::int64_t j, double& local) {
                  const T p = fast_exp(own + h[j] - inv_epsilon * c[j]);
                  if (with_plan) plan_base[i * length + j] = p;
                  local += static_cast<double>(p) * static_cast<double>(c[j]);
                },
                part);
#else
            part = row_transport_host(c, h, length, inv_epsilon, own, with_plan ? plan_base + i * length : nullptr);
#endif
          }
          Kokkos::single(Kokkos::PerThread(team), [&]() {
            lse(at + i) = value;
            if (with_cost) line_cost(at + i) = part;
          });
        });
  }
};

/// ∂objective/∂(projected point) for each line's point:
///   Σ_j P_ij ∂C_ij/∂x_i = Σ_j w_ij (x_i − y_j),
/// w = P/C (euclidean; 0 where C = 0) or 2P (sqeuclidean), summed in j order.
template <class T>
struct LineGradients {
  BlockList blocks;
  Vector<const T> cost;
  Vector<const std::int64_t> cost_offset, line_begin, other_begin, other_count, line_point, other_point;
  Vector<const T> scaled, other_scaled;
  Matrix<const T> points;
  Matrix<const double> points_t;  // the pool coordinate-major, for the host kernel (may be empty)
  Matrix<double> gradient;
  T inv_epsilon;
  bool squared;

  KOKKOS_INLINE_FUNCTION void operator()(const LineMember& team) const {
    const std::int64_t slot = blocks(team.league_rank(), 0);
    const std::int64_t length = other_count(slot);
    const T* base = cost.data() + cost_offset(slot);
    const T* h = other_scaled.data() + other_begin(slot);
    const std::int64_t at = line_begin(slot);
    const int dim = static_cast<int>(points.extent(1));
    Kokkos::parallel_for(
        Kokkos::TeamThreadRange(team, blocks(team.league_rank(), 1), blocks(team.league_rank(), 2)),
        [&](const std::int64_t i) {
          Kokkos::single(Kokkos::PerThread(team), [&]() {
            const T* c = base + i * length;
            const T own = scaled(at + i);
            const std::int64_t r = at + i;
            const std::int64_t x = line_point(slot) + i;
#ifndef KOTML_DEVICE_PASS
            if (points_t.extent(0) > 0) {
              const auto stride = static_cast<std::int64_t>(points_t.extent(1));
              row_gradient_host(c, h, length, inv_epsilon, own, squared, points_t.data() + x,
                                points_t.data() + other_point(slot), stride, dim, &gradient(r, 0));
              return;
            }
#endif
            for (int k = 0; k < dim; ++k) gradient(r, k) = 0;
            for (std::int64_t j = 0; j < length; ++j) {
              const double p = static_cast<double>(fast_exp(own + h[j] - inv_epsilon * c[j]));
              double w;
              if (squared)
                w = 2 * p;
              else
                w = c[j] > T(0) ? p / static_cast<double>(c[j]) : 0.0;
              if (w == 0) continue;
              const std::int64_t y = other_point(slot) + j;
              for (int k = 0; k < dim; ++k)
                gradient(r, k) += w * (static_cast<double>(points(x, k)) - static_cast<double>(points(y, k)));
            }
          });
        });
  }
};

/// Per-slot totals from the final LSEs: marginals, error, cost, objective, status.
template <class T>
struct Finalize {
  Vector<const std::int64_t> problem, row_begin, col_begin, rows, cols;
  Vector<const T> a, b, f, g, lse_row, lse_col;
  Vector<const double> row_cost;
  Vector<double> cost, objective, marginal_error;
  Vector<std::int32_t> status;
  double epsilon, tau_a, tau_b;

  // Contribution of one side: Σ|r − r_upd|, Σ r, Σ pot·r, KL(r | w) parts, Σ w.
  struct Side {
    double err = 0, mass = 0, dual = 0, kl = 0, weight = 0;
  };

  KOKKOS_INLINE_FUNCTION Side side(std::int64_t at, std::int64_t count, const Vector<const T>& w,
                                   const Vector<const T>& pot, const Vector<const T>& lse, double tau) const {
    Side s;
    const double inv_eps = 1.0 / epsilon;
    for (std::int64_t i = 0; i < count; ++i) {
      const double wi = static_cast<double>(w(at + i));
      s.weight += wi;
      if (!(wi > 0)) continue;
      const double l = static_cast<double>(lse(at + i));
      const double marginal = wi * kmath::exp(static_cast<double>(pot(at + i)) * inv_eps + l);
      const double updated = wi * kmath::exp((1.0 - tau) * l);
      s.err += kmath::fabs(marginal - updated);
      s.mass += marginal;
      s.dual += static_cast<double>(pot(at + i)) * marginal;
      if (tau < 1.0) s.kl += (marginal > 0 ? marginal * kmath::log(marginal / wi) : 0.0) - marginal + wi;
    }
    return s;
  }

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t slot) const {
    const Side r = side(row_begin(slot), rows(slot), a, f, lse_row, tau_a);
    const Side c = side(col_begin(slot), cols(slot), b, g, lse_col, tau_b);
    double transport = 0;
    for (std::int64_t i = 0; i < rows(slot); ++i) transport += row_cost(row_begin(slot) + i);
    double value = r.dual + c.dual - epsilon * r.mass + epsilon * r.weight * c.weight;
    if (tau_a < 1.0) value += epsilon * tau_a / (1.0 - tau_a) * r.kl;
    if (tau_b < 1.0) value += epsilon * tau_b / (1.0 - tau_b) * c.kl;
    const std::int64_t u = problem(slot);
    cost(u) = transport;
    objective(u) = value;
    marginal_error(u) = r.err + c.err;
    if (!kmath::isfinite(transport) || !kmath::isfinite(value) || !kmath::isfinite(r.err + c.err))
      status(u) = static_cast<std::int32_t>(SolveStatus::numerical_error);
  }
};

template <class T>
void finalize(const SlotTable& slots, const SinkhornState<T>& state, SinkhornOutputs& out, double epsilon,
              double tau_a, double tau_b) {
  Kokkos::parallel_for("kotml::ot::sinkhorn_finalize", Kokkos::RangePolicy<ExecSpace>(0, slots.count()),
                       Finalize<T>{slots.d_problem, slots.d_row_begin, slots.d_col_begin, slots.d_rows, slots.d_cols,
                                   state.a, state.b, state.f, state.g, state.lse_row, state.lse_col, state.row_cost,
                                   out.cost, out.objective, out.marginal_error, out.status, epsilon, tau_a, tau_b});
}

// ------------------------------------------------------------------- driver

namespace {

template <class T>
struct Sides {
  SideArrays<T> rows, cols;
};

template <class T>
Sides<T> sides_of(const SinkhornProblem<T>& p, SinkhornState<T>& state) {
  const SlotTable& slots = p.slots;
  return {{p.cost, slots.d_row_begin, slots.d_col_begin, slots.d_cols, state.gb, state.a, state.log_a, state.f,
           state.fa, static_cast<T>(p.options.tau_a)},
          {p.cost_t, slots.d_col_begin, slots.d_row_begin, slots.d_rows, state.fa, state.b, state.log_b, state.g,
           state.gb, static_cast<T>(p.options.tau_b)}};
}

/// Problems whose two cost copies fit the team budget are solved whole, one
/// team each, in one launch.
template <class T>
void iterate_in_teams(const SinkhornProblem<T>& p, const Sides<T>& sides, SinkhornState<T>& state,
                      const std::vector<std::int64_t>& in_team, SlotProgress& progress) {
  if (in_team.empty()) return;
  const std::int64_t n_slots = p.slots.count();
  const T eps = static_cast<T>(p.epsilon), inv_eps = static_cast<T>(1.0 / p.epsilon);
  Vector<std::int64_t> which(no_init("kotml::ot::sinkhorn_team_slots"), in_team.size());
  Kokkos::deep_copy(which, Kokkos::View<const std::int64_t*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                               in_team.data(), in_team.size()));
  Vector<std::int32_t> team_iterations("kotml::ot::sinkhorn_team_iterations", n_slots);
  Vector<std::int32_t> team_status("kotml::ot::sinkhorn_team_status", n_slots);
  Kokkos::parallel_for("kotml::ot::sinkhorn_solve_in_team", line_policy(static_cast<std::int64_t>(in_team.size())),
                       SolveInTeam<T>{which, p.slots.d_cost_offset, sides.rows, sides.cols, state.row_err,
                                      team_iterations, team_status, eps, inv_eps, p.options.max_iter,
                                      p.options.check_every, p.options.tol});
  auto it_host = Kokkos::create_mirror_view_and_copy(HostSpace(), team_iterations);
  auto st_host = Kokkos::create_mirror_view_and_copy(HostSpace(), team_status);
  for (const std::int64_t s : in_team) {
    progress.iterations[static_cast<std::size_t>(s)] = it_host(s);
    progress.status[static_cast<std::size_t>(s)] = st_host(s);
  }
}

/// The other problems, row block by row block over every team, a launch per
/// half-step; converged problems leave the active set at each check.
template <class T>
void iterate_in_blocks(const SinkhornProblem<T>& p, const Sides<T>& sides, SinkhornState<T>& state,
                       std::vector<std::int64_t> active, SlotProgress& progress) {
  const SlotTable& slots = p.slots;
  const std::int64_t n_slots = slots.count();
  const T eps = static_cast<T>(p.epsilon), inv_eps = static_cast<T>(1.0 / p.epsilon);
  HalfStep<T> row_step{make_blocks(slots, active, true), slots.d_cost_offset, sides.rows, state.row_err, eps, inv_eps,
                       false};
  HalfStep<T> col_step{make_blocks(slots, active, false), slots.d_cost_offset, sides.cols, state.row_err, eps,
                       inv_eps, false};
  Vector<double> slot_err("kotml::ot::sinkhorn_slot_err", n_slots);
  auto slot_err_host = Kokkos::create_mirror_view(slot_err);
  Vector<std::int64_t> active_device("kotml::ot::sinkhorn_active", n_slots);

  for (int it = 0; it < p.options.max_iter && !active.empty(); ++it) {
    const bool check = it > 0 && it % p.options.check_every == 0;
    row_step.check = check;
    Kokkos::parallel_for("kotml::ot::sinkhorn_update_f", line_policy(row_step.blocks.extent(0)), row_step);
    if (check) {
      auto which_host = Kokkos::View<const std::int64_t*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
          active.data(), active.size());
      auto which = Kokkos::subview(active_device, std::make_pair<std::size_t, std::size_t>(0, active.size()));
      Kokkos::deep_copy(which, which_host);
      Kokkos::parallel_for("kotml::ot::sinkhorn_sum_errors",
                           Kokkos::RangePolicy<ExecSpace>(0, static_cast<std::int64_t>(active.size())),
                           SumErrors{which, slots.d_row_begin, slots.d_rows, state.row_err, slot_err});
    }
    Kokkos::parallel_for("kotml::ot::sinkhorn_update_g", line_policy(col_step.blocks.extent(0)), col_step);
    for (const std::int64_t s : active) progress.iterations[static_cast<std::size_t>(s)] = it + 1;
    if (!check) continue;
    Kokkos::deep_copy(slot_err_host, slot_err);
    std::vector<std::int64_t> still;
    for (const std::int64_t s : active) {
      const double err = slot_err_host(s);
      if (!std::isfinite(err))
        progress.status[static_cast<std::size_t>(s)] = static_cast<std::int32_t>(SolveStatus::numerical_error);
      else if (err < p.options.tol)
        progress.status[static_cast<std::size_t>(s)] = static_cast<std::int32_t>(SolveStatus::optimal);
      else
        still.push_back(s);
    }
    if (still.size() != active.size()) {
      active.swap(still);
      if (!active.empty()) {
        row_step.blocks = make_blocks(slots, active, true);
        col_step.blocks = make_blocks(slots, active, false);
      }
    }
  }
}

/// Status and iterations per problem.
void record_progress(const SlotTable& slots, const SlotProgress& progress, SinkhornOutputs& out) {
  auto iter_host = Kokkos::create_mirror_view(out.iterations);
  auto status_host = Kokkos::create_mirror_view(out.status);
  auto domain_host = Kokkos::create_mirror_view(out.scaling_domain);
  Kokkos::deep_copy(iter_host, out.iterations);
  Kokkos::deep_copy(status_host, out.status);
  Kokkos::deep_copy(domain_host, out.scaling_domain);
  for (std::int64_t s = 0; s < slots.count(); ++s) {
    const auto k = static_cast<std::size_t>(s);
    iter_host(slots.problem[k]) = progress.iterations[k];
    status_host(slots.problem[k]) = progress.status[k];
    domain_host(slots.problem[k]) = progress.scaling[k];
  }
  Kokkos::deep_copy(out.iterations, iter_host);
  Kokkos::deep_copy(out.status, status_host);
  Kokkos::deep_copy(out.scaling_domain, domain_host);
}

/// Cost, objective, marginal error and status of the returned state, and the
/// plan if asked for.
template <class T>
void evaluate(const SinkhornProblem<T>& p, SinkhornState<T>& state, SinkhornOutputs& out, const BlockList& row_blocks,
              const BlockList& col_blocks) {
  const SlotTable& slots = p.slots;
  const T inv_eps = static_cast<T>(1.0 / p.epsilon);
  Vector<T> no_plan;
  EvaluateLines<T> rows_eval{row_blocks,      p.cost,          slots.d_cost_offset, slots.d_row_begin,
                             slots.d_col_begin, slots.d_cols,  state.fa,            state.gb,
                             state.lse_row,   state.row_cost,  p.plan.plan,         p.plan.offset,
                             slots.d_problem, state.log_a,     inv_eps,             static_cast<T>(p.options.tau_a)};
  EvaluateLines<T> cols_eval{col_blocks,      p.cost_t,        slots.d_cost_offset, slots.d_col_begin,
                             slots.d_row_begin, slots.d_rows,  state.gb,            state.fa,
                             state.lse_col,   Vector<double>(), no_plan,            p.plan.offset,
                             slots.d_problem, state.log_b,     inv_eps,             static_cast<T>(p.options.tau_b)};
  Kokkos::parallel_for("kotml::ot::sinkhorn_evaluate_rows", line_policy(row_blocks.extent(0)), rows_eval);
  Kokkos::parallel_for("kotml::ot::sinkhorn_evaluate_cols", line_policy(col_blocks.extent(0)), cols_eval);
  finalize(slots, state, out, p.epsilon, p.options.tau_a, p.options.tau_b);
}

template <class T>
void point_gradients(const SinkhornProblem<T>& p, SinkhornState<T>& state, const BlockList& row_blocks,
                     const BlockList& col_blocks) {
  const SlotTable& slots = p.slots;
  const GradientOutput<T>& gr = p.gradients;
  const T inv_eps = static_cast<T>(1.0 / p.epsilon);
  const bool squared = gr.kind == Cost::sqeuclidean;
  Kokkos::parallel_for("kotml::ot::sinkhorn_source_gradients", line_policy(row_blocks.extent(0)),
                       LineGradients<T>{row_blocks, p.cost, slots.d_cost_offset, slots.d_row_begin,
                                        slots.d_col_begin, slots.d_cols, slots.d_source_point,
                                        slots.d_target_point, state.fa, state.gb, gr.points, gr.points_t, gr.source,
                                        inv_eps, squared});
  Kokkos::parallel_for("kotml::ot::sinkhorn_target_gradients", line_policy(col_blocks.extent(0)),
                       LineGradients<T>{col_blocks, p.cost_t, slots.d_cost_offset, slots.d_col_begin,
                                        slots.d_row_begin, slots.d_rows, slots.d_target_point,
                                        slots.d_source_point, state.gb, state.fa, gr.points, gr.points_t, gr.target,
                                        inv_eps, squared});
}

}  // namespace

template <class T>
void run_sinkhorn(const SinkhornProblem<T>& p, SinkhornState<T>& state, SinkhornOutputs& out) {
  const SlotTable& slots = p.slots;
  const std::int64_t n_slots = slots.count();
  if (n_slots == 0) return;
  std::vector<std::int64_t> every(static_cast<std::size_t>(n_slots));
  for (std::int64_t s = 0; s < n_slots; ++s) every[static_cast<std::size_t>(s)] = s;
  const auto row_blocks = make_blocks(slots, every, true);
  const auto col_blocks = make_blocks(slots, every, false);
  Kokkos::parallel_for("kotml::ot::sinkhorn_scale_g", line_policy(col_blocks.extent(0)),
                       Rescale<T>{col_blocks, slots.d_col_begin, state.g, state.log_b, state.gb,
                                  static_cast<T>(1.0 / p.epsilon)});

  SlotProgress progress(n_slots);
  const std::vector<std::int64_t> scaling = choose_scaling(p, state, every);
  std::vector<std::int64_t> in_log;
  std::set_difference(every.begin(), every.end(), scaling.begin(), scaling.end(), std::back_inserter(in_log));
  transpose_slots<T>(slots, in_log, p.cost, p.cost_t);
  const std::vector<std::int64_t> failed = iterate_scaling(p, state, scaling, progress);
  if (!failed.empty()) {
    in_log.insert(in_log.end(), failed.begin(), failed.end());
    std::sort(in_log.begin(), in_log.end());
  }

  std::vector<std::int64_t> in_team, in_blocks;
  for (const std::int64_t s : in_log) {
    const auto bytes = static_cast<std::size_t>(2 * slots.rows[static_cast<std::size_t>(s)] *
                                                slots.cols[static_cast<std::size_t>(s)]) * sizeof(T);
    (bytes <= p.options.team_solve_bytes ? in_team : in_blocks).push_back(s);
  }
  const Sides<T> sides = sides_of(p, state);
  iterate_in_teams(p, sides, state, in_team, progress);
  iterate_in_blocks(p, sides, state, std::move(in_blocks), progress);
  record_progress(slots, progress, out);
  evaluate(p, state, out, row_blocks, col_blocks);
  if (p.gradients.wanted()) point_gradients(p, state, row_blocks, col_blocks);
  Kokkos::fence();
}

#define KOTML_OT_INSTANTIATE_ENGINE(T) \
  template struct SinkhornState<T>;     \
  template void run_sinkhorn<T>(const SinkhornProblem<T>&, SinkhornState<T>&, SinkhornOutputs&); \
  template void finalize<T>(const SlotTable&, const SinkhornState<T>&, SinkhornOutputs&, double, double, double);

KOTML_OT_INSTANTIATE_ENGINE(float)
KOTML_OT_INSTANTIATE_ENGINE(double)

}  // namespace kotml::ot::detail
