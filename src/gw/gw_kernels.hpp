#pragma once
// The kernels of sampled GW, templated on the plan's scalar S (float with mixed
// precision, double otherwise). Each launch sits in a function of its own; host
// code in sampled_gw.cpp only sequences them and talks to MPI.
//
// The Sinkhorn's row and column log-sum-exps are the ot family's
// (kotml/ot/lse.hpp), shared with the OT solvers; column sums combine over
// tiles and ranks in dist::UnitFixed fixed point.
//
// Determinism: every per-row quantity is a fixed sequence of operations in one
// thread. Column log-sum-exps add exp(x − max) first within a global row tile
// (in S), then in fixed point across tiles and ranks, where addition is exact
// and order-free.

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "kotml/core/math.hpp"
#include "kotml/core/random.hpp"
#include "kotml/core/types.hpp"
#include "kotml/dist/fixed_point.hpp"
#include "kotml/gw/distances.hpp"
#include "kotml/gw/row_partition.hpp"
#include "kotml/ot/fast_exp.hpp"
#include "kotml/ot/lse.hpp"
#include "gw_simd_host.hpp"

namespace kotml::gw::detail {

template <class S>
using Mat = Kokkos::View<S**, Kokkos::LayoutRight, MemSpace>;
template <class S>
using Vec = Kokkos::View<S*, MemSpace>;
template <class S>
using ConstMat = Kokkos::View<const S**, Kokkos::LayoutRight, MemSpace>;
using Fixed = Kokkos::View<std::int64_t*, MemSpace>;  // column_limbs per column
using ColumnFixed = dist::UnitFixed;
constexpr int column_limbs = ColumnFixed::limbs;

constexpr int lanes = 8;
constexpr std::int64_t column_chunk = 32;
// The column max/sum units are plan tiles (row_partition.hpp): the in-unit sums
// fix the bits. Short units run faster for wide costs: a unit walks one row
// stream per row, and 16 streams stay within what the hardware prefetchers
// follow where 64 did not (bench_graph_gw's Sinkhorn at 4000 x 5000, one core:
// float 490 ms with 16-row units, 510 with 8, 656 with 32, 815 with 64; double
// 903 against 974-979).
constexpr std::int64_t column_tile_rows = plan_row_tile;

template <class S>
KOKKOS_FORCEINLINE_FUNCTION S larger(S a, S b) {
  return a < b ? b : a;
}

/// Sum of eight lane accumulators in a fixed tree.
template <class S>
KOKKOS_FORCEINLINE_FUNCTION S lane_total(const S* acc) {
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

/// One row of the momentum step T ← (1−α)·T + α·exp(u − Λ/ε + v); out receives
/// the row's new mass Σ T, cost Σ Λ·T and change Σ (ΔT)².
template <class S>
KOKKOS_FORCEINLINE_FUNCTION void momentum_row(const S* cost, S* t, const S* v, std::int64_t k_count, S u,
                                              S inv_eps, S alpha, double* out) {
  const S keep = S(1) - alpha;
  double mass[lanes] = {0, 0, 0, 0, 0, 0, 0, 0};
  double lin[lanes] = {0, 0, 0, 0, 0, 0, 0, 0};
  double change[lanes] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::int64_t k = 0;
  for (; k + lanes <= k_count; k += lanes)
    for (int l = 0; l < lanes; ++l) {
      const S fresh = ot::fast_exp(u - cost[k + l] * inv_eps + v[k + l]);
      const S old = t[k + l];
      const S updated = keep * old + alpha * fresh;
      t[k + l] = updated;
      const double delta = static_cast<double>(updated) - static_cast<double>(old);
      mass[l] += static_cast<double>(updated);
      lin[l] += static_cast<double>(cost[k + l]) * static_cast<double>(updated);
      change[l] += delta * delta;
    }
  double m = lane_total(mass), c = lane_total(lin), d = lane_total(change);
  for (; k < k_count; ++k) {
    const S fresh = ot::fast_exp(u - cost[k] * inv_eps + v[k]);
    const S old = t[k];
    const S updated = keep * old + alpha * fresh;
    t[k] = updated;
    const double delta = static_cast<double>(updated) - static_cast<double>(old);
    m += static_cast<double>(updated);
    c += static_cast<double>(cost[k]) * static_cast<double>(updated);
    d += delta * delta;
  }
  out[0] = m;
  out[1] = c;
  out[2] = d;
}

// -------------------------------------------------------------- distances → Λ

/// Largest finite entry of a distance block (the lowest double when it has none:
/// the identity of Kokkos::Max). Rows in parallel, each row's entries in a loop:
/// no index division per entry.
inline double block_max_finite(DistanceBlock d) {
  const std::int64_t cols = d.extent(1);
  double m = -kmath::infinity<double>();
  Kokkos::parallel_reduce(
      "kotml::gw::block_max", Kokkos::RangePolicy<ExecSpace>(0, d.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i, double& best) {
        float top = -kmath::infinity<float>();
        for (std::int64_t t = 0; t < cols; ++t) {
          const float v = d(i, t);
          if (kmath::isfinite(v) && v > top) top = v;
        }
        if (static_cast<double>(top) > best) best = static_cast<double>(top);
      },
      Kokkos::Max<double>(m));
  return m;
}

inline std::int64_t block_count_infinite(DistanceBlock d) {
  const std::int64_t cols = d.extent(1);
  std::int64_t count = 0;
  Kokkos::parallel_reduce(
      "kotml::gw::block_infinite", Kokkos::RangePolicy<ExecSpace>(0, d.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i, std::int64_t& c) {
        std::int64_t row = 0;
        for (std::int64_t t = 0; t < cols; ++t) row += kmath::isinf(d(i, t)) ? 1 : 0;
        c += row;
      },
      count);
  return count;
}

/// out = (d with +inf → fill) / divisor, in float as TorchGW does, then cast.
template <class S>
void normalise_block(DistanceBlock d, float fill, float divisor, Mat<S> out) {
  const std::int64_t cols = d.extent(1);
  Kokkos::parallel_for(
      "kotml::gw::normalise_block", Kokkos::RangePolicy<ExecSpace>(0, d.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) {
        for (std::int64_t t = 0; t < cols; ++t) {
          float v = d(i, t);
          if (kmath::isinf(v)) v = fill;
          if (divisor > 0.0f) v = v / divisor;
          out(i, t) = static_cast<S>(v);
        }
      });
}

// ------------------------------------------------------------------- Sinkhorn

/// Row update from the column potentials. new_u(i) = log_a(i) − LSE_i, with
/// LSE_i over the real columns (the ot family's row log-sum-exp) merged with
/// the slack column (cost `slack_scaled` = −penalty/ε). With `check`, returns
/// max_i |exp(old_u(i) + LSE_i) − a(i)|: the row-marginal error of the state
/// (old_u, log_v).
template <class S>
S row_update(ConstMat<S> lambda, Vec<S> log_v, Vec<S> log_a, Vec<S> a, S inv_eps, S slack_scaled,
             Vec<S> old_u, Vec<S> new_u, bool check) {
  const std::int64_t k_count = lambda.extent(1);
  S err = S(0);
  Kokkos::parallel_reduce(
      "kotml::gw::sinkhorn_rows", Kokkos::RangePolicy<ExecSpace>(0, lambda.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i, S& worst) {
        const S real = ot::detail::row_lse_one(&lambda(i, 0), log_v.data(), k_count, inv_eps);
        const S lse = ot::detail::log_add_exp(real, log_v(k_count) + slack_scaled);
        new_u(i) = log_a(i) - lse;
        if (check) {
          const S e = kmath::fabs(kmath::exp(old_u(i) + lse) - a(i));
          if (!(e <= worst)) worst = e;  // NaN propagates as the worst error
        }
      },
      Kokkos::Max<S>(err));
  return err;
}

/// The slack row's log-sum-exp: over k < K of log_v(k) + slack_scaled, and the
/// corner log_v(K) (cost 0). Every rank computes it alike: an exact max, then a
/// fixed-point sum.
template <class S>
S slack_row_lse(Vec<S> log_v, S slack_scaled) {
  const std::int64_t k_count = log_v.extent(0) - 1;
  double m = -kmath::infinity<double>();
  Kokkos::parallel_reduce(
      "kotml::gw::slack_row_max", Kokkos::RangePolicy<ExecSpace>(0, k_count + 1),
      KOKKOS_LAMBDA(const std::int64_t k, double& best) {
        const double x = k < k_count ? static_cast<double>(log_v(k) + slack_scaled)
                                     : static_cast<double>(log_v(k));
        if (x > best) best = x;
      },
      Kokkos::Max<double>(m));
  Fixed total("kotml::gw::slack_row_fixed", column_limbs);
  Kokkos::parallel_for(
      "kotml::gw::slack_row_sum", Kokkos::RangePolicy<ExecSpace>(0, k_count + 1), KOKKOS_LAMBDA(const std::int64_t k) {
        const S x = k < k_count ? log_v(k) + slack_scaled : log_v(k);
        ColumnFixed::atomic_deposit(total.data(), static_cast<double>(ot::fast_exp(static_cast<S>(x - static_cast<S>(m)))));
      });
  auto host = Kokkos::create_mirror_view_and_copy(HostSpace(), total);
  return static_cast<S>(m + kmath::log(ColumnFixed::to_double(host.data())));
}

/// Column maxima over this rank's rows of log_u(i) − Λ(i, k)/ε (k < K) and of
/// log_u(i) + slack_scaled (k = K). Max is exact in any order, so units of
/// (row tile × column chunk) combine by atomic max.
template <class S>
void column_max(ConstMat<S> lambda, Vec<S> log_u, S inv_eps, S slack_scaled, Vec<S> col_max) {
  const std::int64_t rows = lambda.extent(0), k_count = lambda.extent(1);
  const auto ld = static_cast<std::int64_t>(lambda.stride(0));
  const std::int64_t tiles = (rows + column_tile_rows - 1) / column_tile_rows;
  const std::int64_t chunks = (k_count + column_chunk - 1) / column_chunk + 1;  // + slack column
  Kokkos::deep_copy(col_max, -kmath::infinity<S>());
  Kokkos::parallel_for(
      "kotml::gw::sinkhorn_column_max", Kokkos::RangePolicy<ExecSpace>(0, tiles * chunks),
      KOKKOS_LAMBDA(const std::int64_t unit) {
        const std::int64_t r0 = (unit / chunks) * column_tile_rows;
        const std::int64_t r1 = r0 + column_tile_rows < rows ? r0 + column_tile_rows : rows;
        const std::int64_t chunk = unit % chunks;
        if (chunk == chunks - 1) {  // the slack column
          S m = -kmath::infinity<S>();
          for (std::int64_t i = r0; i < r1; ++i) m = larger(m, log_u(i) + slack_scaled);
          Kokkos::atomic_fetch_max(&col_max(k_count), m);
          return;
        }
        const std::int64_t k0 = chunk * column_chunk;
        const std::int64_t width = k0 + column_chunk < k_count ? column_chunk : k_count - k0;
        S top[column_chunk];
        for (std::int64_t c = 0; c < width; ++c) top[c] = -kmath::infinity<S>();
        ot::detail::column_max(lambda.data() + r0 * ld + k0, ld, r1 - r0, width, log_u.data() + r0, inv_eps, top);
        for (std::int64_t c = 0; c < width; ++c) Kokkos::atomic_fetch_max(&col_max(k0 + c), top[c]);
      });
}

/// The global maxima gain the slack row's terms (every rank alike).
template <class S>
void add_slack_row_to_max(Vec<S> col_max, S slack_u, S slack_scaled) {
  const std::int64_t k_count = col_max.extent(0) - 1;
  Kokkos::parallel_for(
      "kotml::gw::slack_row_max_terms", Kokkos::RangePolicy<ExecSpace>(0, k_count + 1),
      KOKKOS_LAMBDA(const std::int64_t k) {
        col_max(k) = larger(col_max(k), k < k_count ? slack_u + slack_scaled : slack_u);
      });
}

/// Σ over this rank's rows of exp(x − col_max(k)), per column, in fixed point:
/// each (row tile × column chunk) unit adds its tile's sums in S, then deposits
/// them into the column's limbs atomically.
template <class S>
void column_sums(ConstMat<S> lambda, Vec<S> log_u, S inv_eps, S slack_scaled, Vec<S> col_max, Fixed fixed) {
  const std::int64_t rows = lambda.extent(0), k_count = lambda.extent(1);
  const auto ld = static_cast<std::int64_t>(lambda.stride(0));
  const std::int64_t tiles = (rows + column_tile_rows - 1) / column_tile_rows;
  const std::int64_t chunks = (k_count + column_chunk - 1) / column_chunk + 1;
  Kokkos::deep_copy(fixed, std::int64_t(0));
  Kokkos::parallel_for(
      "kotml::gw::sinkhorn_column_sums", Kokkos::RangePolicy<ExecSpace>(0, tiles * chunks),
      KOKKOS_LAMBDA(const std::int64_t unit) {
        const std::int64_t r0 = (unit / chunks) * column_tile_rows;
        const std::int64_t r1 = r0 + column_tile_rows < rows ? r0 + column_tile_rows : rows;
        const std::int64_t chunk = unit % chunks;
        if (chunk == chunks - 1) {
          S s = S(0);
          for (std::int64_t i = r0; i < r1; ++i)
            s += ot::fast_exp(log_u(i) + slack_scaled - col_max(k_count));
          ColumnFixed::atomic_deposit(&fixed(k_count * column_limbs), static_cast<double>(s));
          return;
        }
        const std::int64_t k0 = chunk * column_chunk;
        const std::int64_t width = k0 + column_chunk < k_count ? column_chunk : k_count - k0;
        S acc[column_chunk];
        S shift[column_chunk];
        for (std::int64_t c = 0; c < column_chunk; ++c) {
          acc[c] = S(0);
          shift[c] = c < width ? col_max(k0 + c) : S(0);
        }
        ot::detail::column_sum(lambda.data() + r0 * ld + k0, ld, r1 - r0, width, log_u.data() + r0, inv_eps, shift,
                               acc);
        for (std::int64_t c = 0; c < width; ++c)
          ColumnFixed::atomic_deposit(&fixed((k0 + c) * column_limbs), static_cast<double>(acc[c]));
      });
}

/// log_v(k) = τ·(log_b(k) − LSE_k), LSE_k from the global fixed-point sums plus
/// the slack row's term; τ = 1 for a balanced target.
template <class S>
void column_finish(Fixed fixed, Vec<S> col_max, Vec<S> log_b, S slack_u, S slack_scaled, S tau, Vec<S> log_v) {
  const std::int64_t k_count = log_v.extent(0) - 1;
  Kokkos::parallel_for(
      "kotml::gw::sinkhorn_columns", Kokkos::RangePolicy<ExecSpace>(0, k_count + 1),
      KOKKOS_LAMBDA(const std::int64_t k) {
        const S slack_term = k < k_count ? slack_u + slack_scaled : slack_u;
        std::int64_t limbs[column_limbs];
        for (int l = 0; l < column_limbs; ++l) limbs[l] = fixed(k * column_limbs + l);
        const double s = ColumnFixed::to_double(limbs) + static_cast<double>(ot::fast_exp(slack_term - col_max(k)));
        const S lse = col_max(k) + static_cast<S>(kmath::log(s));
        log_v(k) = tau * (log_b(k) - lse);
      });
}

// ------------------------------------------------------------ plan and update

/// out(i, k) = exp(log_u(i) − C(i, k)/ε + log_v(k)).
template <class S>
void sinkhorn_plan(ConstMat<S> cost, Vec<S> log_u, Vec<S> log_v, S inv_eps, Mat<S> out) {
  const std::int64_t k_count = cost.extent(1);
  Kokkos::parallel_for(
      "kotml::gw::sinkhorn_plan", Kokkos::RangePolicy<ExecSpace>(0, cost.extent(0) * k_count),
      KOKKOS_LAMBDA(const std::int64_t f) {
        const std::int64_t i = f / k_count, k = f % k_count;
        out(i, k) = kmath::exp(log_u(i) - cost(i, k) * inv_eps + log_v(k));
      });
}

/// T = p ⊗ q; row_mass(i) = Σ_k T(i, k).
template <class S>
void outer_product_plan(Vec<S> p_local, Vec<S> q, Mat<S> plan, Kokkos::View<double*, MemSpace> row_mass) {
  const std::int64_t k_count = plan.extent(1);
  Kokkos::parallel_for(
      "kotml::gw::initial_plan", Kokkos::RangePolicy<ExecSpace>(0, plan.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) {
        double acc[lanes] = {0, 0, 0, 0, 0, 0, 0, 0};
        std::int64_t k = 0;
        for (; k + lanes <= k_count; k += lanes)
          for (int l = 0; l < lanes; ++l) {
            plan(i, k + l) = p_local(i) * q(k + l);
            acc[l] += static_cast<double>(plan(i, k + l));
          }
        double s = lane_total(acc);
        for (; k < k_count; ++k) {
          plan(i, k) = p_local(i) * q(k);
          s += static_cast<double>(plan(i, k));
        }
        row_mass(i) = s;
      });
}

/// T ← (1−α)·T + α·T_new, T_new(i, k) = exp(log_u(i) − Λ(i, k)/ε + log_v(k)).
/// Per row: the new mass Σ_k T, the cost Σ_k Λ·T and the change Σ_k (ΔT)².
template <class S>
void momentum_update(ConstMat<S> lambda, Mat<S> plan, Vec<S> log_u, Vec<S> log_v, S inv_eps, S alpha,
                     Kokkos::View<double*, MemSpace> row_mass, Kokkos::View<double*, MemSpace> row_cost,
                     Kokkos::View<double*, MemSpace> row_change) {
  const std::int64_t k_count = plan.extent(1);
  Kokkos::parallel_for(
      "kotml::gw::momentum_update", Kokkos::RangePolicy<ExecSpace>(0, plan.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) {
        double sums[3];
#ifdef KOTML_DEVICE_PASS
        momentum_row(&lambda(i, 0), &plan(i, 0), log_v.data(), k_count, log_u(i), inv_eps, alpha, sums);
#else
        momentum_row_host(&lambda(i, 0), &plan(i, 0), log_v.data(), k_count, log_u(i), inv_eps, alpha, sums);
#endif
        row_mass(i) = sums[0];
        row_cost(i) = sums[1];
        row_change(i) = sums[2];
      });
}

// -------------------------------------------------------------------- sampling

/// Weights as integers: q(i) = floor(w(i)/w_max · 2^40), so cumulative sums
/// are exact and the same on every rank.
constexpr double sampling_resolution = 1099511627776.0;  // 2^40

inline void quantise_weights(Kokkos::View<const double*, MemSpace> w, double w_max, Fixed q) {
  Kokkos::parallel_for(
      "kotml::gw::quantise_rows", Kokkos::RangePolicy<ExecSpace>(0, w.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) {
        q(i) = w_max > 0.0 ? static_cast<std::int64_t>(kmath::floor(w(i) / w_max * sampling_resolution))
                           : 0;
      });
}

/// Inclusive prefix sums (integers: exact in any order); returns the total.
inline std::int64_t inclusive_scan(Fixed q, Fixed cumulative) {
  std::int64_t total = 0;
  Kokkos::parallel_scan(
      "kotml::gw::cumulative_weights", Kokkos::RangePolicy<ExecSpace>(0, q.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i, std::int64_t& running, const bool final) {
        running += q(i);
        if (final) cumulative(i) = running;
      },
      total);
  return total;
}

/// Stream positions of draw m: row draws at 16·m, column draws at 16·(M + m).
/// One bounded draw uses one word but for a rejection (probability < 2^-20),
/// so sixteen words keep the draws of one iteration apart.
constexpr std::uint64_t draw_stride = 16;

/// rows(m): the first i with cumulative(i) > u_m, u_m uniform on [0, total);
/// uniform over [0, n) when total is 0.
inline void draw_rows(Fixed cumulative, std::int64_t total, std::uint64_t seed, std::uint64_t iteration,
                      Kokkos::View<NodeId*, MemSpace> rows) {
  const std::int64_t n = cumulative.extent(0);
  Kokkos::parallel_for(
      "kotml::gw::draw_rows", Kokkos::RangePolicy<ExecSpace>(0, rows.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t m) {
        random::Stream stream(seed, random::Purpose::gw_sampling, iteration,
                              draw_stride * static_cast<std::uint64_t>(m));
        if (total <= 0) {
          rows(m) = static_cast<NodeId>(stream.below(static_cast<std::uint64_t>(n)));
          return;
        }
        const std::int64_t u = static_cast<std::int64_t>(stream.below(static_cast<std::uint64_t>(total)));
        std::int64_t lo = 0, hi = n - 1;
        while (lo < hi) {
          const std::int64_t mid = lo + (hi - lo) / 2;
          if (cumulative(mid) > u) hi = mid; else lo = mid + 1;
        }
        rows(m) = static_cast<NodeId>(lo);
      });
}

/// For each draw whose row this rank holds: a column from that row of T
/// (quantised like the rows; uniform if the row is all zero, or when `uniform`).
/// Other draws get -1.
template <class S>
void draw_columns(ConstMat<S> plan, std::int64_t first_row, Kokkos::View<NodeId*, MemSpace> rows,
                  std::uint64_t seed, std::uint64_t iteration, bool uniform,
                  Kokkos::View<NodeId*, MemSpace> cols) {
  const std::int64_t local_rows = plan.extent(0), k_count = plan.extent(1);
  const std::int64_t m_count = rows.extent(0);
  Kokkos::parallel_for(
      "kotml::gw::draw_columns", Kokkos::RangePolicy<ExecSpace>(0, m_count),
      KOKKOS_LAMBDA(const std::int64_t m) {
        const std::int64_t i = rows(m) - first_row;
        if (i < 0 || i >= local_rows) {
          cols(m) = -1;
          return;
        }
        random::Stream stream(seed, random::Purpose::gw_sampling, iteration,
                              draw_stride * static_cast<std::uint64_t>(m_count + m));
        const S* t = &plan(i, 0);
        double top = 0.0;
        for (std::int64_t k = 0; k < k_count; ++k) top = larger(top, static_cast<double>(t[k]));
        if (uniform || !(top > 0.0)) {
          cols(m) = static_cast<NodeId>(stream.below(static_cast<std::uint64_t>(k_count)));
          return;
        }
        std::int64_t total = 0;
        for (std::int64_t k = 0; k < k_count; ++k)
          total += static_cast<std::int64_t>(kmath::floor(static_cast<double>(t[k]) / top * sampling_resolution));
        const std::int64_t u = static_cast<std::int64_t>(stream.below(static_cast<std::uint64_t>(total)));
        std::int64_t running = 0;
        NodeId chosen = static_cast<NodeId>(k_count - 1);
        for (std::int64_t k = 0; k < k_count; ++k) {
          running += static_cast<std::int64_t>(kmath::floor(static_cast<double>(t[k]) / top * sampling_resolution));
          if (running > u) {
            chosen = static_cast<NodeId>(k);
            break;
          }
        }
        cols(m) = chosen;
      });
}

// ---------------------------------------------------------------------- output

/// argmax_k T(i, k), first of equals.
template <class S>
void row_argmax(ConstMat<S> plan, Kokkos::View<std::int64_t*, MemSpace> match) {
  const std::int64_t k_count = plan.extent(1);
  Kokkos::parallel_for(
      "kotml::gw::row_argmax", Kokkos::RangePolicy<ExecSpace>(0, plan.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) {
        std::int64_t best = 0;
        for (std::int64_t k = 1; k < k_count; ++k)
          if (plan(i, k) > plan(i, best)) best = k;
        match(i) = best;
      });
}

template <class S>
void widen(Mat<S> from, Mat<double> to) {
  const std::int64_t cols = from.extent(1);
  Kokkos::parallel_for(
      "kotml::gw::plan_to_double", Kokkos::RangePolicy<ExecSpace>(0, from.extent(0) * cols),
      KOKKOS_LAMBDA(const std::int64_t f) {
        to(f / cols, f % cols) = static_cast<double>(from(f / cols, f % cols));
      });
}

template <class S>
void fill_from_host(Vec<S> to, const std::vector<double>& from) {
  auto h = Kokkos::create_mirror_view(to);
  for (std::size_t i = 0; i < from.size(); ++i) h(i) = static_cast<S>(from[i]);
  Kokkos::deep_copy(to, h);
}

}  // namespace kotml::gw::detail
