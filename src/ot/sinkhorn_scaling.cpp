// The stabilised scaling domain of the Sinkhorn engine (the maths is in
// kotml/ot/sinkhorn.hpp; the slots and state in sinkhorn_engine.hpp).
//
// Layout. A slot's kernel K̃ (n×m, row-major) lives in its transposed-cost
// space. Its rows are cut into blocks of a fixed number of rows that depends
// only on m (about 2^18 entries each); one iteration is
//   row pass:    for each block, for each row i in order:
//                  s_i = Σ_j K̃_ij w_j  (w = b∘v),  u_i from s_i,
//                  partial_block[j] += a_i u_i K̃_ij
//   column pass: t_j = Σ_blocks partial_block[j] in block order, v_j from t_j,
//                w_j = b_j v_j.
// Every sum has a fixed order that depends on the problem's shape alone, so a
// slot solved whole by one team (small problems) and one spread block by
// block over all teams give the same bits, whatever the thread count.
//
// Absorption. At each check the scalings of every active slot are scanned: if
// one of them is zero, infinite or NaN the slot has failed (it goes back to the
// log domain); if one leaves [2^−Θ, 2^Θ] the slot absorbs them,
//   f̄ += ε log u, ḡ += ε log v, u = v = 1, K̃ rebuilt from C,
// which changes no potential.

#include "sinkhorn_engine.hpp"

#include "cost_rows.hpp"
#include "scaling_host.hpp"
#include "kotml/core/region.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

namespace kotml::ot::detail {

namespace {

constexpr std::int64_t block_entries = std::int64_t(1) << 18;

std::int64_t rows_per_block(std::int64_t n, std::int64_t m) {
  return std::clamp<std::int64_t>((block_entries + m - 1) / std::max<std::int64_t>(m, 1), 1,
                                  std::max<std::int64_t>(n, 1));
}

/// Blocks of rows: {slot, first row, one past the last, offset of its partial}.
using RowBlocks = Kokkos::View<std::int64_t* [4], MemSpace>;

/// The fused-pass blocks of the listed slots, slot by slot, and per slot (by
/// slot id) its first block and block count.
struct ScalingLayout {
  RowBlocks blocks;
  Vector<std::int64_t> first_block, block_count, partial_at;
  std::vector<std::int64_t> host_first_block, host_block_count;
  std::int64_t partial_size = 0;

  ScalingLayout(const SlotTable& slots, const std::vector<std::int64_t>& which) {
    const std::int64_t n_slots = slots.count();
    host_first_block.assign(static_cast<std::size_t>(n_slots), 0);
    host_block_count.assign(static_cast<std::size_t>(n_slots), 0);
    std::vector<std::int64_t> partial_host(static_cast<std::size_t>(n_slots), 0);
    std::vector<std::int64_t> flat;
    for (const std::int64_t s : which) {
      const auto k = static_cast<std::size_t>(s);
      const std::int64_t n = slots.rows[k], m = slots.cols[k];
      const std::int64_t per = rows_per_block(n, m);
      host_first_block[k] = static_cast<std::int64_t>(flat.size() / 4);
      partial_host[k] = partial_size;
      for (std::int64_t first = 0; first < n; first += per) {
        flat.insert(flat.end(), {s, first, std::min(n, first + per), partial_size});
        partial_size += m;
        ++host_block_count[k];
      }
    }
    blocks = RowBlocks(no_init("kotml::ot::scaling_blocks"), flat.size() / 4);
    auto host = Kokkos::create_mirror_view(blocks);
    for (std::size_t b = 0; b < flat.size() / 4; ++b)
      for (int c = 0; c < 4; ++c) host(b, c) = flat[4 * b + static_cast<std::size_t>(c)];
    Kokkos::deep_copy(blocks, host);
    first_block = device_copy_of<Vector<std::int64_t>>(host_first_block, "kotml::ot::scaling_first_block");
    block_count = device_copy_of<Vector<std::int64_t>>(host_block_count, "kotml::ot::scaling_block_count");
    partial_at = device_copy_of<Vector<std::int64_t>>(partial_host, "kotml::ot::scaling_partial_at");
  }
};

/// Everything the scaling kernels read and write.
template <class T>
struct ScalingArrays {
  RowBlocks blocks;
  Vector<const std::int64_t> first_block, block_count, partial_at;
  Vector<const T> cost;  // C, for rebuilding K̃
  Vector<T> kernel;      // K̃ in the transposed-cost space
  Vector<const std::int64_t> cost_offset, row_begin, col_begin, rows, cols;
  Vector<const T> a, b;
  Vector<T> f_bar, g_bar;  // absorbed potentials (the state's f and g)
  Vector<T> u, v, bv;
  Vector<T> partial;
  Vector<double> line_err;
  double epsilon, tau_a, tau_b;

  /// u or v from its sum: sum^(−τ) exp(−(1−τ) pot̄/ε); 1/sum when τ = 1.
  KOKKOS_INLINE_FUNCTION T scaling_from(T sum, T pot_bar, double tau) const {
    if (tau == 1.0) return T(1) / sum;
    return static_cast<T>(kmath::exp(-(1.0 - tau) * static_cast<double>(pot_bar) / epsilon -
                                     tau * kmath::log(static_cast<double>(sum))));
  }

  /// K̃_ij = exp((f̄_i + ḡ_j − C_ij)/ε) for rows [first, last) of a slot.
  template <class Member>
  KOKKOS_INLINE_FUNCTION void build_rows(const Member& team, std::int64_t slot, std::int64_t first,
                                         std::int64_t last) const {
    const std::int64_t m = cols(slot);
    const T* c = cost.data() + cost_offset(slot);
    T* k = kernel.data() + cost_offset(slot);
    const T* g = g_bar.data() + col_begin(slot);
    const T inv_eps = static_cast<T>(1.0 / epsilon);
    for (std::int64_t i = first; i < last; ++i) {
      const T fi = f_bar(row_begin(slot) + i);
#ifdef KOTML_DEVICE_PASS
      Kokkos::parallel_for(Kokkos::TeamVectorRange(team, m), [&](const std::int64_t j) {
        k[i * m + j] = fast_exp((fi + g[j] - c[i * m + j]) * inv_eps);
      });
#else
      (void)team;
      scaling_kernel_row_host(c + i * m, g, m, fi, inv_eps, k + i * m);
#endif
    }
  }

  /// The row pass over one block: u for its rows, and its partial column sums.
  template <class Member>
  KOKKOS_INLINE_FUNCTION void row_block(const Member& team, std::int64_t block, bool check) const {
    const std::int64_t slot = blocks(block, 0), first = blocks(block, 1), last = blocks(block, 2);
    const std::int64_t m = cols(slot);
    const T* k = kernel.data() + cost_offset(slot);
    const T* w = bv.data() + col_begin(slot);
    T* acc = partial.data() + blocks(block, 3);
#ifndef KOTML_DEVICE_PASS
    // Host, rows long enough to come from memory: scaling_stream_rows rows'
    // dot products at once (one stream each), and in the same sweep the
    // previous group's rows (read just before, now in cache) into the block's
    // column sums, in row order. Each row's bits are those of one dot product
    // and one axpy.
    (void)team;
    std::int64_t i = first;
    if (m * static_cast<std::int64_t>(sizeof(T)) >= scaling_stream_min_row_bytes) {
      const T* pending = nullptr;  // the previous group's rows, not yet in acc
      T pending_alpha[scaling_stream_rows];
      for (; i + scaling_stream_rows <= last; i += scaling_stream_rows) {
        T s[scaling_stream_rows];
        scaling_dot_rows_axpy_host(k + i * m, m, w, 0, s, pending, m, pending_alpha, acc, pending == k + first * m,
                                   m);
        for (int t = 0; t < scaling_stream_rows; ++t)
          pending_alpha[t] = finish_row(row_begin(slot) + i + t, s[t], check);
        pending = k + i * m;
      }
      if (pending != nullptr)
        scaling_dot_rows_axpy_host(static_cast<const T*>(nullptr), m, w, 0, static_cast<T*>(nullptr), pending, m,
                                   pending_alpha, acc, pending == k + first * m, m);
    }
    for (; i < last; ++i) {
      const T s = scaling_dot_host(k + i * m, w, m);
      scaling_axpy_host(k + i * m, m, finish_row(row_begin(slot) + i, s, check), acc, i == first);
    }
#else
    for (std::int64_t i = first; i < last; ++i) {
      const T* row = k + i * m;
      const std::int64_t r = row_begin(slot) + i;
      T s = 0;
      Kokkos::parallel_reduce(
          Kokkos::TeamVectorRange(team, m), [&](const std::int64_t j, T& local) { local += row[j] * w[j]; }, s);
      const T u_old = u(r);
      const T u_new = scaling_from(s, f_bar(r), tau_a);
      const T alpha = a(r) * u_new;
      Kokkos::parallel_for(Kokkos::TeamVectorRange(team, m), [&](const std::int64_t j) {
        acc[j] = (i == first ? T(0) : acc[j]) + alpha * row[j];
      });
      team.team_barrier();
      Kokkos::single(Kokkos::PerTeam(team), [&]() {
        if (check) line_err(r) = row_change(r, s, u_old, u_new);
        u(r) = u_new;
      });
    }
#endif
  }

  /// The line error a_r |u_old s − u_new s| (r_i(f) = a_i u_i s_i before and
  /// after the update).
  KOKKOS_INLINE_FUNCTION double row_change(std::int64_t r, T s, T u_old, T u_new) const {
    const double ds = static_cast<double>(s);
    return static_cast<double>(a(r)) *
           kmath::fabs(static_cast<double>(u_old) * ds - static_cast<double>(u_new) * ds);
  }

  /// Host rows: u_r from its sum, its error at a check; returns a_r u_r.
  KOKKOS_INLINE_FUNCTION T finish_row(std::int64_t r, T s, bool check) const {
    const T u_new = scaling_from(s, f_bar(r), tau_a);
    if (check) line_err(r) = row_change(r, s, u(r), u_new);
    u(r) = u_new;
    return a(r) * u_new;
  }

  /// The column pass over columns [first, last) of a slot: t_j summed over the
  /// blocks in order (in v, which the pass replaces), then v_j and w_j. The
  /// blocks run in the outer loop so that each partial is read contiguously.
  template <class Member>
  KOKKOS_INLINE_FUNCTION void columns(const Member& team, std::int64_t slot, std::int64_t first,
                                      std::int64_t last) const {
    const std::int64_t m = cols(slot), at = col_begin(slot);
    const T* p = partial.data() + partial_at(slot);
    for (std::int64_t q = 0; q < block_count(slot); ++q)
      Kokkos::parallel_for(Kokkos::TeamVectorRange(team, first, last), [&](const std::int64_t j) {
        v(at + j) = (q == 0 ? T(0) : v(at + j)) + p[q * m + j];
      });
    Kokkos::parallel_for(Kokkos::TeamVectorRange(team, first, last), [&](const std::int64_t j) {
      const T v_new = scaling_from(v(at + j), g_bar(at + j), tau_b);
      v(at + j) = v_new;
      bv(at + j) = b(at + j) * v_new;
    });
  }

  /// 0: every scaling of the slot is in range; 1: absorb; 2: failed.
  KOKKOS_INLINE_FUNCTION int scan(std::int64_t slot) const {
    const double bound = ScalingLimits<T>::bound;
    int verdict = 0;
    auto look = [&](T x) {
      const double y = static_cast<double>(x);
      if (!(y > 0) || !kmath::isfinite(y))
        verdict = 2;
      else if ((y > bound || y < 1 / bound) && verdict == 0)
        verdict = 1;
    };
    for (std::int64_t i = 0; i < rows(slot); ++i) look(u(row_begin(slot) + i));
    for (std::int64_t j = 0; j < cols(slot); ++j) look(v(col_begin(slot) + j));
    return verdict;
  }

  KOKKOS_INLINE_FUNCTION void absorb_row(std::int64_t r) const {
    f_bar(r) = static_cast<T>(static_cast<double>(f_bar(r)) + epsilon * kmath::log(static_cast<double>(u(r))));
    u(r) = 1;
  }
  KOKKOS_INLINE_FUNCTION void absorb_column(std::int64_t c) const {
    g_bar(c) = static_cast<T>(static_cast<double>(g_bar(c)) + epsilon * kmath::log(static_cast<double>(v(c))));
    v(c) = 1;
    bv(c) = b(c);
  }
};

/// Row shifts f̄_i = min_j (C_ij − g_j) and row spans (max − min).
template <class T>
struct RowShifts {
  BlockList blocks;
  Vector<const T> cost, g;
  Vector<const std::int64_t> cost_offset, row_begin, col_begin, cols;
  Vector<T> f;
  Vector<double> span;

  KOKKOS_INLINE_FUNCTION void operator()(const LineMember& team) const {
    const std::int64_t slot = blocks(team.league_rank(), 0);
    const std::int64_t m = cols(slot);
    const T* c = cost.data() + cost_offset(slot);
    const T* gs = g.data() + col_begin(slot);
    Kokkos::parallel_for(
        Kokkos::TeamThreadRange(team, blocks(team.league_rank(), 1), blocks(team.league_rank(), 2)),
        [&](const std::int64_t i) {
          T lo = kmath::infinity<T>(), hi = -kmath::infinity<T>();
#ifndef KOTML_DEVICE_PASS
          scaling_row_range_host(c + i * m, gs, m, &lo, &hi);
#else
          Kokkos::parallel_reduce(
              Kokkos::ThreadVectorRange(team, m),
              [&](const std::int64_t j, T& low) {
                const T d = c[i * m + j] - gs[j];
                low = d < low ? d : low;
              },
              Kokkos::Min<T>(lo));
          Kokkos::parallel_reduce(
              Kokkos::ThreadVectorRange(team, m),
              [&](const std::int64_t j, T& high) {
                const T d = c[i * m + j] - gs[j];
                high = d > high ? d : high;
              },
              Kokkos::Max<T>(hi));
#endif
          Kokkos::single(Kokkos::PerThread(team), [&]() {
            f(row_begin(slot) + i) = lo;
            span(row_begin(slot) + i) = static_cast<double>(hi) - static_cast<double>(lo);
          });
        });
  }
};

/// Sets u = v = 1, w = b and builds K̃ for the listed slots (one team per slot's block).
template <class T>
struct StartSlots {
  ScalingArrays<T> x;
  KOKKOS_INLINE_FUNCTION void operator()(const LineMember& team) const {
    const std::int64_t block = team.league_rank();
    const std::int64_t slot = x.blocks(block, 0), first = x.blocks(block, 1), last = x.blocks(block, 2);
    Kokkos::parallel_for(Kokkos::TeamVectorRange(team, first, last),
                         [&](const std::int64_t i) { x.u(x.row_begin(slot) + i) = 1; });
    if (block == x.first_block(slot))
      Kokkos::parallel_for(Kokkos::TeamVectorRange(team, x.cols(slot)), [&](const std::int64_t j) {
        x.v(x.col_begin(slot) + j) = 1;
        x.bv(x.col_begin(slot) + j) = x.b(x.col_begin(slot) + j);
      });
    x.build_rows(team, slot, first, last);
  }
};

template <class T>
struct RowPass {
  ScalingArrays<T> x;
  Vector<const std::int64_t> active_blocks;
  bool check;
  KOKKOS_INLINE_FUNCTION void operator()(const LineMember& team) const {
    x.row_block(team, active_blocks(team.league_rank()), check);
  }
};

/// Blocks of columns for the column pass: {slot, first column, one past the last}.
BlockList column_blocks(const SlotTable& slots, const std::vector<std::int64_t>& which) {
  constexpr std::int64_t width = 1024;
  std::vector<std::int64_t> flat;
  for (const std::int64_t s : which)
    for (std::int64_t j = 0; j < slots.cols[static_cast<std::size_t>(s)]; j += width)
      flat.insert(flat.end(), {s, j, std::min(slots.cols[static_cast<std::size_t>(s)], j + width)});
  return block_list(flat, "kotml::ot::scaling_column_blocks");
}

template <class T>
struct ColumnPass {
  ScalingArrays<T> x;
  BlockList col_blocks;
  KOKKOS_INLINE_FUNCTION void operator()(const LineMember& team) const {
    const std::int64_t b = team.league_rank();
    x.columns(team, col_blocks(b, 0), col_blocks(b, 1), col_blocks(b, 2));
  }
};

/// Per active slot: the summed line errors (at a check) and the scan verdict.
template <class T>
struct CheckSlots {
  ScalingArrays<T> x;
  Vector<const std::int64_t> which;
  Vector<double> slot_err;
  Vector<std::int32_t> verdict;
  bool with_error;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t k) const {
    const std::int64_t s = which(k);
    if (with_error) {
      double sum = 0;
      for (std::int64_t i = 0; i < x.rows(s); ++i) sum += x.line_err(x.row_begin(s) + i);
      slot_err(s) = sum;
    }
    verdict(s) = x.scan(s);
  }
};

/// Absorbs the scalings of the blocks' slots and rebuilds their K̃.
template <class T>
struct Absorb {
  ScalingArrays<T> x;
  Vector<const std::int64_t> active_blocks;
  KOKKOS_INLINE_FUNCTION void operator()(const LineMember& team) const {
    const std::int64_t block = active_blocks(team.league_rank());
    const std::int64_t slot = x.blocks(block, 0), first = x.blocks(block, 1), last = x.blocks(block, 2);
    Kokkos::parallel_for(Kokkos::TeamVectorRange(team, first, last),
                         [&](const std::int64_t i) { x.absorb_row(x.row_begin(slot) + i); });
    if (block == x.first_block(slot))
      Kokkos::parallel_for(Kokkos::TeamVectorRange(team, x.cols(slot)),
                           [&](const std::int64_t j) { x.absorb_column(x.col_begin(slot) + j); });
    team.team_barrier();
    x.build_rows(team, slot, first, last);
  }
};

/// The whole scaling iteration of one small slot in one team, with the same
/// passes, checks and absorptions as the block path.
template <class T>
struct ScalingSolveInTeam {
  ScalingArrays<T> x;
  Vector<const std::int64_t> which;
  Vector<std::int32_t> iterations, status, failed;  // per slot
  int max_iter, check_every;
  double tol;

  KOKKOS_INLINE_FUNCTION void operator()(const LineMember& team) const {
    const std::int64_t slot = which(team.league_rank());
    const std::int64_t first = x.first_block(slot), count = x.block_count(slot);
    int done = 0, lost = 0;
    std::int32_t outcome = static_cast<std::int32_t>(SolveStatus::max_iter);
    for (int it = 0; it < max_iter; ++it) {
      const bool check = it > 0 && it % check_every == 0;
      for (std::int64_t q = first; q < first + count; ++q) x.row_block(team, q, check);
      team.team_barrier();
      x.columns(team, slot, 0, x.cols(slot));
      team.team_barrier();
      done = it + 1;
      if (!check) continue;
      double err = 0;
      int verdict = 0;
      Kokkos::single(
          Kokkos::PerTeam(team),
          [&](double& total) {
            double sum = 0;
            for (std::int64_t i = 0; i < x.rows(slot); ++i) sum += x.line_err(x.row_begin(slot) + i);
            total = sum;
          },
          err);
      Kokkos::single(Kokkos::PerTeam(team), [&](int& v) { v = x.scan(slot); }, verdict);
      if (!kmath::isfinite(err) || verdict == 2) {
        lost = 1;
        outcome = static_cast<std::int32_t>(SolveStatus::numerical_error);
        break;
      }
      if (err < tol) {
        outcome = static_cast<std::int32_t>(SolveStatus::optimal);
        break;
      }
      if (verdict == 1) {
        Kokkos::parallel_for(Kokkos::TeamVectorRange(team, x.rows(slot)),
                             [&](const std::int64_t i) { x.absorb_row(x.row_begin(slot) + i); });
        Kokkos::parallel_for(Kokkos::TeamVectorRange(team, x.cols(slot)),
                             [&](const std::int64_t j) { x.absorb_column(x.col_begin(slot) + j); });
        team.team_barrier();
        for (std::int64_t q = first; q < first + count; ++q) x.build_rows(team, slot, x.blocks(q, 1), x.blocks(q, 2));
        team.team_barrier();
      }
    }
    if (!lost) {
      int verdict = 0;
      Kokkos::single(Kokkos::PerTeam(team), [&](int& v) { v = x.scan(slot); }, verdict);
      if (verdict == 2) {
        lost = 1;
        outcome = static_cast<std::int32_t>(SolveStatus::numerical_error);
      }
    }
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      iterations(slot) = done;
      status(slot) = outcome;
      failed(slot) = lost;
    });
  }
};

/// Potentials from the absorbed ones and the scalings (u = v = 1 for a failed
/// slot, which so keeps its last absorbed g for the log domain), and the
/// scaled potentials the evaluation reads.
template <class T>
struct Finish {
  ScalingArrays<T> x;
  Vector<const std::int64_t> which;
  Vector<const std::int32_t> failed;
  Vector<const T> log_a, log_b;
  Vector<T> fa, gb;
  KOKKOS_INLINE_FUNCTION void operator()(const LineMember& team) const {
    const std::int64_t s = which(team.league_rank());
    const bool lost = failed(s) != 0;
    const T inv_eps = static_cast<T>(1.0 / x.epsilon);
    Kokkos::parallel_for(Kokkos::TeamVectorRange(team, x.rows(s)), [&](const std::int64_t i) {
      const std::int64_t r = x.row_begin(s) + i;
      if (!lost) x.absorb_row(r);
      fa(r) = x.f_bar(r) * inv_eps + log_a(r);
    });
    Kokkos::parallel_for(Kokkos::TeamVectorRange(team, x.cols(s)), [&](const std::int64_t j) {
      const std::int64_t c = x.col_begin(s) + j;
      if (!lost) x.absorb_column(c);
      gb(c) = x.g_bar(c) * inv_eps + log_b(c);
    });
  }
};

}  // namespace

SlotProgress::SlotProgress(std::int64_t slots)
    : iterations(static_cast<std::size_t>(slots), 0),
      status(static_cast<std::size_t>(slots), static_cast<std::int32_t>(SolveStatus::max_iter)),
      scaling(static_cast<std::size_t>(slots), 0) {}

template <class T>
std::vector<std::int64_t> choose_scaling(const SinkhornProblem<T>& p, SinkhornState<T>& state,
                                         const std::vector<std::int64_t>& candidates) {
  if (candidates.empty() || p.options.domain == SinkhornDomain::log) return {};
  const SlotTable& slots = p.slots;
  const auto row_blocks = make_blocks(slots, candidates, true);
  const std::int64_t total_rows = static_cast<std::int64_t>(state.f.extent(0));
  Vector<double> span(no_init("kotml::ot::scaling_row_span"), static_cast<std::size_t>(total_rows));
  Kokkos::parallel_for("kotml::ot::scaling_row_shifts", line_policy(row_blocks.extent(0)),
                       RowShifts<T>{row_blocks, p.cost, state.g, slots.d_cost_offset, slots.d_row_begin,
                                    slots.d_col_begin, slots.d_cols, state.f, span});
  if (p.options.domain == SinkhornDomain::scaling) return candidates;
  auto span_host = Kokkos::create_mirror_view_and_copy(HostSpace(), span);
  const double limit = ScalingLimits<T>::span * p.epsilon;
  std::vector<std::int64_t> chosen;
  for (const std::int64_t s : candidates) {
    const auto k = static_cast<std::size_t>(s);
    double widest = 0;
    bool finite = true;
    for (std::int64_t i = 0; i < slots.rows[k]; ++i) {
      const double w = span_host(slots.row_begin[k] + i);
      if (!std::isfinite(w)) finite = false;
      widest = std::max(widest, w);
    }
    if (finite && widest <= limit) chosen.push_back(s);
  }
  return chosen;
}

template <class T>
void transpose_slots(const SlotTable& slots, const std::vector<std::int64_t>& which, const Vector<const T>& cost,
                     const Vector<T>& cost_t) {
  // Square tiles small enough for L1 (and one GPU block), so that both the
  // rows read and the columns written stay in cache.
  constexpr std::int64_t tile = 32;
  std::vector<std::int64_t> flat;
  for (const std::int64_t s : which) {
    const auto k = static_cast<std::size_t>(s);
    for (std::int64_t i = 0; i < slots.rows[k]; i += tile)
      for (std::int64_t j = 0; j < slots.cols[k]; j += tile) flat.insert(flat.end(), {s, i, j});
  }
  if (flat.empty()) return;
  const auto tiles = device_copy_of<Vector<std::int64_t>>(flat, "kotml::ot::transpose_tiles");
  Vector<const std::int64_t> offset = slots.d_cost_offset, rows = slots.d_rows, cols = slots.d_cols;
  Kokkos::parallel_for(
      "kotml::ot::transpose_slots", Kokkos::RangePolicy<ExecSpace>(0, static_cast<std::int64_t>(flat.size() / 3)),
      KOKKOS_LAMBDA(const std::int64_t t) {
        const std::int64_t slot = tiles(3 * t), i0 = tiles(3 * t + 1), j0 = tiles(3 * t + 2);
        const std::int64_t n = rows(slot), m = cols(slot);
        const std::int64_t i1 = i0 + tile < n ? i0 + tile : n, j1 = j0 + tile < m ? j0 + tile : m;
        const T* c = cost.data() + offset(slot);
        T* ct = cost_t.data() + offset(slot);
        for (std::int64_t j = j0; j < j1; ++j)
          for (std::int64_t i = i0; i < i1; ++i) ct[j * n + i] = c[i * m + j];
      });
}

template <class T>
std::vector<std::int64_t> iterate_scaling(const SinkhornProblem<T>& p, SinkhornState<T>& state,
                                          const std::vector<std::int64_t>& which, SlotProgress& progress) {
  if (which.empty()) return {};
  const ProfilingRegion region("kotml::ot::sinkhorn_scaling");
  const SlotTable& slots = p.slots;
  const std::int64_t n_slots = slots.count();
  const ScalingLayout layout(slots, which);
  Vector<T> u(no_init("kotml::ot::scaling_u"), state.f.extent(0));
  Vector<T> v(no_init("kotml::ot::scaling_v"), state.g.extent(0));
  Vector<T> bv(no_init("kotml::ot::scaling_bv"), state.g.extent(0));
  Vector<T> partial(no_init("kotml::ot::scaling_partial"), static_cast<std::size_t>(layout.partial_size));
  const ScalingArrays<T> x{layout.blocks,     layout.first_block, layout.block_count, layout.partial_at,
                           p.cost,            p.cost_t,           slots.d_cost_offset, slots.d_row_begin,
                           slots.d_col_begin, slots.d_rows,       slots.d_cols,        state.a,
                           state.b,           state.f,            state.g,             u,
                           v,                 bv,                 partial,             state.row_err,
                           p.epsilon,         p.options.tau_a,    p.options.tau_b};
  Kokkos::parallel_for("kotml::ot::scaling_start", line_policy(layout.blocks.extent(0)), StartSlots<T>{x});

  std::vector<std::int64_t> in_team, active;
  for (const std::int64_t s : which) {
    const auto bytes = static_cast<std::size_t>(2 * slots.rows[static_cast<std::size_t>(s)] *
                                                slots.cols[static_cast<std::size_t>(s)]) * sizeof(T);
    (bytes <= p.options.team_solve_bytes ? in_team : active).push_back(s);
  }
  Vector<std::int32_t> failed("kotml::ot::scaling_failed", n_slots);
  auto failed_host = Kokkos::create_mirror_view(failed);

  if (!in_team.empty()) {
    Vector<std::int32_t> iterations("kotml::ot::scaling_team_iterations", n_slots);
    Vector<std::int32_t> status("kotml::ot::scaling_team_status", n_slots);
    Kokkos::parallel_for("kotml::ot::scaling_solve_in_team", line_policy(static_cast<std::int64_t>(in_team.size())),
                         ScalingSolveInTeam<T>{x, device_copy_of<Vector<std::int64_t>>(in_team, "kotml::ot::scaling_team_slots"),
                                               iterations, status, failed, p.options.max_iter, p.options.check_every,
                                               p.options.tol});
    auto it_host = Kokkos::create_mirror_view_and_copy(HostSpace(), iterations);
    auto st_host = Kokkos::create_mirror_view_and_copy(HostSpace(), status);
    for (const std::int64_t s : in_team) {
      progress.iterations[static_cast<std::size_t>(s)] = it_host(s);
      progress.status[static_cast<std::size_t>(s)] = st_host(s);
    }
    Kokkos::deep_copy(failed_host, failed);  // the in-team solver scanned its slots at the end
  }

  // The larger slots, block by block over every team, a launch per pass.
  Vector<double> slot_err("kotml::ot::scaling_slot_err", n_slots);
  Vector<std::int32_t> verdict("kotml::ot::scaling_verdict", n_slots);
  auto err_host = Kokkos::create_mirror_view(slot_err);
  auto verdict_host = Kokkos::create_mirror_view(verdict);
  auto blocks_of = [&](const std::vector<std::int64_t>& list) {
    std::vector<std::int64_t> flat;
    for (const std::int64_t s : list)
      for (std::int64_t q = 0; q < layout.host_block_count[static_cast<std::size_t>(s)]; ++q)
        flat.push_back(layout.host_first_block[static_cast<std::size_t>(s)] + q);
    return device_copy_of<Vector<std::int64_t>>(flat, "kotml::ot::scaling_active_blocks");
  };
  const std::vector<std::int64_t> in_blocks = active;
  Vector<std::int64_t> row_list = blocks_of(active);
  BlockList col_blocks = column_blocks(slots, active);
  Vector<std::int64_t> active_device = device_copy_of<Vector<std::int64_t>>(active, "kotml::ot::scaling_active");
  for (int it = 0; it < p.options.max_iter && !active.empty(); ++it) {
    const bool check = it > 0 && it % p.options.check_every == 0;
    Kokkos::parallel_for("kotml::ot::scaling_rows", line_policy(row_list.extent(0)), RowPass<T>{x, row_list, check});
    Kokkos::parallel_for("kotml::ot::scaling_columns", line_policy(col_blocks.extent(0)), ColumnPass<T>{x, col_blocks});
    for (const std::int64_t s : active) progress.iterations[static_cast<std::size_t>(s)] = it + 1;
    if (!check) continue;
    Kokkos::parallel_for("kotml::ot::scaling_check", Kokkos::RangePolicy<ExecSpace>(0, active.size()),
                         CheckSlots<T>{x, active_device, slot_err, verdict, true});
    Kokkos::deep_copy(err_host, slot_err);
    Kokkos::deep_copy(verdict_host, verdict);
    std::vector<std::int64_t> still, absorbing;
    for (const std::int64_t s : active) {
      const auto k = static_cast<std::size_t>(s);
      if (!std::isfinite(err_host(s)) || verdict_host(s) == 2) {
        progress.status[k] = static_cast<std::int32_t>(SolveStatus::numerical_error);
        failed_host(s) = 1;
      } else if (err_host(s) < p.options.tol) {
        progress.status[k] = static_cast<std::int32_t>(SolveStatus::optimal);
      } else {
        still.push_back(s);
        if (verdict_host(s) == 1) absorbing.push_back(s);
      }
    }
    if (!absorbing.empty()) {
      const auto absorb_blocks = blocks_of(absorbing);
      Kokkos::parallel_for("kotml::ot::scaling_absorb", line_policy(absorb_blocks.extent(0)),
                           Absorb<T>{x, absorb_blocks});
    }
    if (still.size() != active.size()) {
      active.swap(still);
      if (!active.empty()) {
        row_list = blocks_of(active);
        col_blocks = column_blocks(slots, active);
        active_device = device_copy_of<Vector<std::int64_t>>(active, "kotml::ot::scaling_active");
      }
    }
  }
  // Block-path slots that stopped at max_iter without a check since their last pass.
  std::vector<std::int64_t> unfinished;
  for (const std::int64_t s : in_blocks)
    if (progress.status[static_cast<std::size_t>(s)] == static_cast<std::int32_t>(SolveStatus::max_iter))
      unfinished.push_back(s);
  if (!unfinished.empty()) {
    Kokkos::parallel_for("kotml::ot::scaling_final_scan", Kokkos::RangePolicy<ExecSpace>(0, unfinished.size()),
                         CheckSlots<T>{x, device_copy_of<Vector<std::int64_t>>(unfinished, "kotml::ot::scaling_check"),
                                       slot_err, verdict, false});
    Kokkos::deep_copy(verdict_host, verdict);
    for (const std::int64_t s : unfinished)
      if (verdict_host(s) == 2) failed_host(s) = 1;
  }
  Kokkos::deep_copy(failed, failed_host);

  const auto which_device = device_copy_of<Vector<std::int64_t>>(which, "kotml::ot::scaling_slots");
  Kokkos::parallel_for("kotml::ot::scaling_finish", line_policy(static_cast<std::int64_t>(which.size())),
                       Finish<T>{x, which_device, failed, state.log_a, state.log_b, state.fa, state.gb});
  transpose_slots<T>(slots, which, p.cost, p.cost_t);

  std::vector<std::int64_t> lost;
  for (const std::int64_t s : which) {
    const auto k = static_cast<std::size_t>(s);
    if (failed_host(s)) {
      lost.push_back(s);
      progress.status[k] = static_cast<std::int32_t>(SolveStatus::max_iter);
    } else {
      progress.scaling[k] = 1;
    }
  }
  return lost;
}

#define KOTML_OT_INSTANTIATE_SCALING(T)                                                                        \
  template std::vector<std::int64_t> choose_scaling<T>(const SinkhornProblem<T>&, SinkhornState<T>&,            \
                                                       const std::vector<std::int64_t>&);                      \
  template void transpose_slots<T>(const SlotTable&, const std::vector<std::int64_t>&, const Vector<const T>&,   \
                                  const Vector<T>&);                                                             \
  template std::vector<std::int64_t> iterate_scaling<T>(const SinkhornProblem<T>&, SinkhornState<T>&,           \
                                                        const std::vector<std::int64_t>&, SlotProgress&);

KOTML_OT_INSTANTIATE_SCALING(float)
KOTML_OT_INSTANTIATE_SCALING(double)

}  // namespace kotml::ot::detail
