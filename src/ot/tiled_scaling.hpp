#pragma once
// The sweeps of the tiled Sinkhorn's scaling domain (the maths is in
// kotml/ot/tiled_sinkhorn.hpp). They read the stored costs C and the kernel K̃,
// both in the tile layout of tile_costs.hpp (tile (I, J) at (I·col_tiles + J)·
// tile_entries, 64 × 256 row-major), and only the valid rows_in(I) × cols_in(J)
// part of a tile: padding is never read.
//
// Determinism: a row's sum adds its column tiles in order (a fixed-lane dot
// product inside a tile); a column's sum adds the rows of one row tile in order
// in T and deposits each tile's part in fixed point, so neither depends on the
// thread count, the rank count or the schedule.

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "kotml/core/math.hpp"
#include "kotml/core/types.hpp"
#include "kotml/ot/fast_exp.hpp"
#include "scaling_host.hpp"
#include "tiled_sweeps.hpp"

namespace kotml::ot::detail {

/// The offset of tile (I, J) in stored costs and in K̃.
template <class T>
KOKKOS_INLINE_FUNCTION std::int64_t tile_offset(const TileCostData<T>& costs, std::int64_t I, std::int64_t J) {
  return (I * costs.col_tiles + J) * tile_entries;
}

/// K̃_ij = exp((f̄_i + ḡ_j − c_ij)·s) for every row, for the rows whose
/// `selected` flag is set, or (with `columns`) for the listed columns of every
/// row, one at a time with the same expression (so the same bits); one team
/// per row tile.
template <class T>
struct KernelSweep {
  TileCostData<T> costs;  // stored
  Vector<T> kernel;
  Vector<const T> f_bar, g_bar;  // per padded row / column
  T s;
  Kokkos::View<const std::int32_t*, MemSpace> selected;  // per local row; empty: all
  Kokkos::View<const std::int64_t*, MemSpace> columns;   // empty: whole rows

  KOKKOS_INLINE_FUNCTION void operator()(const TileMember& team) const {
    const std::int64_t I = team.league_rank();
    if (columns.extent(0) > 0) {
      build_columns(team, I);
      return;
    }
    for (std::int64_t J = 0; J < costs.col_tiles; ++J) build_tile(team, I, J);
  }

  /// The listed columns' entries of row tile I, one column at a time.
  KOKKOS_INLINE_FUNCTION void build_columns(const TileMember& team, std::int64_t I) const {
    const std::int64_t rows = costs.rows_in(I);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, columns.extent(0)), [&](const std::int64_t q) {
      const std::int64_t j = columns(q);
      const std::int64_t at = tile_offset(costs, I, j / tile_cols) + j % tile_cols;
      const T* c = costs.stored.data() + at;
      T* k = kernel.data() + at;
      const T gj = g_bar(j);
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, rows), [&](const std::int64_t i) {
        k[i * tile_cols] = fast_exp((f_bar(I * tile_rows + i) + gj - c[i * tile_cols]) * s);
      });
    });
  }

  /// Tile (I, J) of K̃: every row, or the selected ones.
  KOKKOS_INLINE_FUNCTION void build_tile(const TileMember& team, std::int64_t I, std::int64_t J) const {
    const std::int64_t rows = costs.rows_in(I);
    const std::int64_t width = costs.cols_in(J), col0 = J * tile_cols;
    const T* c = costs.stored.data() + tile_offset(costs, I, J);
    T* k = kernel.data() + tile_offset(costs, I, J);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows), [&](const std::int64_t i) {
      const std::int64_t r = I * tile_rows + i;
      if (selected.extent(0) > 0 && selected(r) == 0) return;
#ifdef KOTML_DEVICE_PASS
      const T fi = f_bar(r);
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, width), [&](const std::int64_t j) {
        k[i * tile_cols + j] = fast_exp((fi + g_bar(col0 + j) - c[i * tile_cols + j]) * s);
      });
#else
      scaling_kernel_row_host(c + i * tile_cols, g_bar.data() + col0, width, f_bar(r), s, k + i * tile_cols);
#endif
    });
  }

#ifndef KOTML_DEVICE_PASS
  /// Row i of row tile I, every column tile: build_tile's entries for one row.
  void build_row_host(std::int64_t I, std::int64_t i) const {
    const std::int64_t r = I * tile_rows + i;
    for (std::int64_t J = 0; J < costs.col_tiles; ++J) {
      const std::int64_t at = tile_offset(costs, I, J) + i * tile_cols;
      scaling_kernel_row_host(costs.stored.data() + at, g_bar.data() + J * tile_cols, costs.cols_in(J), f_bar(r), s,
                              kernel.data() + at);
    }
  }
#endif
};

/// Per local row, low(r) = min_j (c_ij − ḡ_j) and span(r) = max_j (c_ij − ḡ_j)
/// − low(r), in double; one team per row tile, its tiles read whole in order
/// (a row's 1 KiB pieces 64 KiB apart would defeat the prefetchers).
template <class T>
struct RowRangeSweep {
  TileCostData<T> costs;  // stored
  Vector<const T> g_bar;
  Vector<double> low, span;

  static std::size_t scratch_bytes() { return 2 * tile_rows * sizeof(double) + 256; }

  KOKKOS_INLINE_FUNCTION void operator()(const TileMember& team) const {
    const std::int64_t I = team.league_rank();
    const std::int64_t rows = costs.rows_in(I);
    ScratchCarver pad{team.team_scratch(1)};
    double* lo = pad.take<double>(tile_rows);
    double* hi = pad.take<double>(tile_rows);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows), [&](const std::int64_t i) {
      Kokkos::single(Kokkos::PerThread(team), [&]() {
        lo[i] = kmath::infinity<double>();
        hi[i] = -kmath::infinity<double>();
      });
    });
    team.team_barrier();
    for (std::int64_t J = 0; J < costs.col_tiles; ++J) {
      const std::int64_t width = costs.cols_in(J), col0 = J * tile_cols;
      const T* tile = costs.stored.data() + tile_offset(costs, I, J);
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows), [&](const std::int64_t i) {
        const T* c = tile + i * tile_cols;
        T tile_lo = kmath::infinity<T>(), tile_hi = -kmath::infinity<T>();
#ifdef KOTML_DEVICE_PASS
        Kokkos::parallel_reduce(
            Kokkos::ThreadVectorRange(team, width),
            [&](const std::int64_t j, T& least) {
              const T d = c[j] - g_bar(col0 + j);
              least = d < least ? d : least;
            },
            Kokkos::Min<T>(tile_lo));
        Kokkos::parallel_reduce(
            Kokkos::ThreadVectorRange(team, width),
            [&](const std::int64_t j, T& most) {
              const T d = c[j] - g_bar(col0 + j);
              most = d > most ? d : most;
            },
            Kokkos::Max<T>(tile_hi));
#else
        scaling_row_range_host(c, g_bar.data() + col0, width, &tile_lo, &tile_hi);
#endif
        Kokkos::single(Kokkos::PerThread(team), [&]() {
          lo[i] = kmath::fmin(lo[i], static_cast<double>(tile_lo));
          hi[i] = kmath::fmax(hi[i], static_cast<double>(tile_hi));
        });
      });
      team.team_barrier();
    }
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows), [&](const std::int64_t i) {
      Kokkos::single(Kokkos::PerThread(team), [&]() {
        const std::int64_t r = I * tile_rows + i;
        low(r) = lo[i];
        span(r) = hi[i] - lo[i];
      });
    });
  }
};

/// sum(r) = R_r = Σ_j K̃_rj β_j: per column tile a fixed-lane dot product in T,
/// the tiles added in order in double; one team per row tile, its tiles read
/// whole in order.
template <class T>
struct ScalingRowSweep {
  TileCostData<T> costs;
  Vector<const T> kernel, beta;  // beta per padded column
  Vector<double> sum;

  static std::size_t scratch_bytes() { return tile_rows * sizeof(double) + 256; }

  KOKKOS_INLINE_FUNCTION void operator()(const TileMember& team) const {
    const std::int64_t I = team.league_rank();
    const std::int64_t rows = costs.rows_in(I);
    ScratchCarver pad{team.team_scratch(1)};
    double* total = pad.take<double>(tile_rows);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows), [&](const std::int64_t i) {
      Kokkos::single(Kokkos::PerThread(team), [&]() { total[i] = 0; });
    });
    team.team_barrier();
    add_tiles(team, I, total);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows), [&](const std::int64_t i) {
      Kokkos::single(Kokkos::PerThread(team), [&]() { sum(I * tile_rows + i) = total[i]; });
    });
  }

  /// Every column tile's part of each row's sum, tiles in order. The host
  /// reads scaling_stream_rows full tiles at once (each row's parts still
  /// added in tile order, so the same bits): one stream per tile.
  KOKKOS_INLINE_FUNCTION void add_tiles(const TileMember& team, std::int64_t I, double* total) const {
    std::int64_t J = 0;
#ifndef KOTML_DEVICE_PASS
    const std::int64_t rows = costs.rows_in(I), full = costs.cols / tile_cols;  // full-width tiles first
    for (; J + scaling_stream_rows <= full; J += scaling_stream_rows) {
      const T* tile = kernel.data() + tile_offset(costs, I, J);
      const T* w = beta.data() + J * tile_cols;
      for (std::int64_t i = 0; i < rows; ++i) {
        T parts[scaling_stream_rows];
        scaling_dot_rows_host(tile + i * tile_cols, tile_entries, w, tile_cols, tile_cols, parts);
        for (int t = 0; t < scaling_stream_rows; ++t) total[i] += static_cast<double>(parts[t]);
      }
    }
#endif
    for (; J < costs.col_tiles; ++J) add_tile(team, I, J, total);
  }

  /// Column tile J's part of each row's sum (in order after tiles < J).
  KOKKOS_INLINE_FUNCTION void add_tile(const TileMember& team, std::int64_t I, std::int64_t J, double* total) const {
    const std::int64_t rows = costs.rows_in(I);
    const std::int64_t width = costs.cols_in(J), col0 = J * tile_cols;
    const T* tile = kernel.data() + tile_offset(costs, I, J);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows), [&](const std::int64_t i) {
      const T* k = tile + i * tile_cols;
      T part = 0;
#ifdef KOTML_DEVICE_PASS
      Kokkos::parallel_reduce(
          Kokkos::ThreadVectorRange(team, width), [&](const std::int64_t j, T& local) { local += k[j] * beta(col0 + j); },
          part);
#else
      part = scaling_dot_host(k, beta.data() + col0, width);
#endif
      Kokkos::single(Kokkos::PerThread(team), [&]() { total[i] += static_cast<double>(part); });
    });
    team.team_barrier();
  }
};

/// acc[k] = Σ_i α_i K̃_ik over one tile's rows, in order, in T. Ends with a team barrier.
template <class T>
KOKKOS_INLINE_FUNCTION void scaled_column_sums(const TileMember& team, const T* tile, std::int64_t rows,
                                               std::int64_t width, const T* alpha, T* acc) {
#ifdef KOTML_DEVICE_PASS
  Kokkos::parallel_for(Kokkos::TeamThreadRange(team, width), [&](const std::int64_t k) {
    Kokkos::single(Kokkos::PerThread(team), [&]() {
      T s = 0;
      for (std::int64_t i = 0; i < rows; ++i) s += alpha[i] * tile[i * tile_cols + k];
      acc[k] = s;
    });
  });
#else
  for (std::int64_t i = 0; i < rows; ++i) scaling_axpy_host(tile + i * tile_cols, width, alpha[i], acc, i == 0);
#endif
  team.team_barrier();
}

/// For each column (one team per column tile, row tiles in order):
///   sum mode: limbs(j) += 2^−e_j·Σ_{i in the tile} α_i K̃_ij, one fixed-point
///             deposit per row tile (`scale` holds 2^−e_j; a part that cannot be
///             held poisons the column);
///   max mode: top(j) = max_i α_i K̃_ij over this rank's rows.
template <class T>
struct ScalingColumnSweep {
  TileCostData<T> costs;
  Vector<const T> kernel, alpha;  // alpha per padded row (0 past the rows)
  Vector<const double> scale;     // sum mode, per padded column
  Vector<T> top;                  // max mode, per padded column
  Limbs limbs;                    // sum mode, padded columns × column_limbs
  bool max_mode = false;

  static std::size_t scratch_bytes() { return ((tile_cols * sizeof(T) + 127) / 128) * 128 + 256; }

  KOKKOS_INLINE_FUNCTION void operator()(const TileMember& team) const {
    const std::int64_t J = team.league_rank();
    const std::int64_t width = costs.cols_in(J), col0 = J * tile_cols;
    ScratchCarver pad{team.team_scratch(1)};
    T* acc = pad.take<T>(tile_cols);
    if (max_mode)
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, width), [&](const std::int64_t k) {
        Kokkos::single(Kokkos::PerThread(team), [&]() { acc[k] = T(0); });
      });
    team.team_barrier();
    for (std::int64_t I = 0; I < costs.row_tiles; ++I) {
      const T* tile = kernel.data() + tile_offset(costs, I, J);
      const std::int64_t rows = costs.rows_in(I);
      const T* a = alpha.data() + I * tile_rows;
      if (max_mode) {
#ifdef KOTML_DEVICE_PASS
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, width), [&](const std::int64_t k) {
          Kokkos::single(Kokkos::PerThread(team), [&]() {
            for (std::int64_t i = 0; i < rows; ++i) {
              const T v = a[i] * tile[i * tile_cols + k];
              acc[k] = v > acc[k] ? v : acc[k];
            }
          });
        });
#else
        scaling_column_max_host(tile, tile_cols, rows, width, a, acc);
#endif
        team.team_barrier();
        continue;
      }
      scaled_column_sums(team, tile, rows, width, a, acc);
      deposit_columns(team, limbs.data() + col0 * column_limbs, acc, scale.data() + col0, width);
      team.team_barrier();
    }
    if (max_mode)
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, width), [&](const std::int64_t k) {
        Kokkos::single(Kokkos::PerThread(team), [&]() { top(col0 + k) = acc[k]; });
      });
  }
};

/// Alternating updates in the scaling domain with one read of K̃ from memory
/// per iteration (the log domain's JointSweep, here). Per row tile:
///   1. R_i = Σ_j K̃_ij β_j into sum (ScalingRowSweep's sums), then
///      lse_i = log R_i − f̄_i/ε and f_i = updated_potential(log a_i, lse_i);
///   2. α_i = exp((f_i − f̄_i)/ε) (0 for a zero weight or past the rows); a row
///      whose α leaves [2^−Θ, 2^Θ] absorbs it, f̄_i = f_i in T and its row of K̃
///      rebuilt, flagged in `selected` (the host's row scalings);
///   3. 2^−e_j·Σ_i α_i K̃_ij per column tile, deposited into the team's slot
///      (JointSlots; as ScalingColumnSweep's sum mode, per row tile in the same
///      order).
/// Step 3 reads the row tile's K̃ again. The device reads it whole after
/// step 2; the host (row_tile_host) takes the row tile four rows at a time
/// and adds each group into the column sums in the sweep that reads the next,
/// so that the second read comes from cache. The host checks R and the column
/// totals afterwards, as after the two sweeps.
template <class T>
struct ScalingJointSweep {
  ScalingRowSweep<T> row_part;  // costs, kernel, beta, sum (R_i)
  KernelSweep<T> rebuild;       // the same kernel; f_bar, g_bar, s, selected
  Vector<T> f_bar;              // rebuild.f_bar, written on absorption
  Kokkos::View<std::int32_t*, MemSpace> selected;  // rebuild.selected, written
  Vector<const double> log_a;   // per local row (−∞: zero weight)
  double eps = 1, tau = 1;
  Vector<double> f;             // per local row
  Vector<T> alpha;              // per padded row
  Vector<const double> scale;   // per padded column: 2^−e_j
  JointSlots slots;

  /// The device: four tiles' column sums. The host: the column sums of a
  /// whole row tile (every column), added four rows at a time.
  std::size_t scratch_bytes() const {
#ifdef KOTML_DEVICE_PASS
    const std::int64_t acc_entries = scaling_stream_rows * tile_cols;
#else
    const std::int64_t acc_entries = row_part.costs.col_tiles * tile_cols;
#endif
    return tile_rows * sizeof(double) + ((acc_entries * sizeof(T) + 127) / 128) * 128 + 512;
  }

  KOKKOS_INLINE_FUNCTION void operator()(const TileMember& team) const {
    ScratchCarver pad{team.team_scratch(1)};
    double* total = pad.take<double>(tile_rows);
#ifdef KOTML_DEVICE_PASS
    T* acc = pad.take<T>(scaling_stream_rows * tile_cols);
    int* absorbed = pad.take<int>(1);
#else
    T* acc = pad.take<T>(row_part.costs.col_tiles * tile_cols);
#endif
    std::int64_t* claimed = pad.take<std::int64_t>(1);
    std::int64_t* limbs = slots.own(team);
    for (;;) {
      const std::int64_t I = slots.claim(team, claimed);
      if (I >= row_part.costs.row_tiles) return;
#ifdef KOTML_DEVICE_PASS
      row_tile(team, I, total, acc, absorbed, limbs);
#else
      row_tile_host(team, I, total, acc, limbs);
#endif
    }
  }

  /// Step 2 for padded row r of sum R_r: f_r, α_r, and the absorption (f̄_r =
  /// f_r in T, selected(r) set) when α_r leaves [2^−Θ, 2^Θ]; true then.
  KOKKOS_INLINE_FUNCTION bool finish_row(std::int64_t r, double sum) const {
    row_part.sum(r) = sum;
    selected(r) = 0;
    const double fresh = updated_potential(log_a(r), kmath::log(sum) - static_cast<double>(f_bar(r)) / eps, eps, tau);
    f(r) = fresh;
    if (!(log_a(r) > -kmath::infinity<double>())) {
      alpha(r) = T(0);
      return false;
    }
    const double bound = ScalingLimits<T>::bound;
    double v = kmath::exp((fresh - static_cast<double>(f_bar(r))) / eps);
    bool absorbs = false;
    if (!(v >= 1 / bound && v <= bound) && kmath::isfinite(fresh)) {
      f_bar(r) = static_cast<T>(fresh);
      v = kmath::exp((fresh - static_cast<double>(f_bar(r))) / eps);
      selected(r) = 1;
      absorbs = true;
    }
    alpha(r) = static_cast<T>(v);
    return absorbs;
  }

#ifdef KOTML_DEVICE_PASS
  KOKKOS_INLINE_FUNCTION void row_tile(const TileMember& team, std::int64_t I, double* total, T* acc, int* absorbed,
                                       std::int64_t* limbs) const {
    const TileCostData<T>& costs = row_part.costs;
    const std::int64_t rows = costs.rows_in(I);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows), [&](const std::int64_t i) {
      Kokkos::single(Kokkos::PerThread(team), [&]() { total[i] = 0; });
    });
    Kokkos::single(Kokkos::PerTeam(team), [&]() { *absorbed = 0; });
    team.team_barrier();
    row_part.add_tiles(team, I, total);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, tile_rows), [&](const std::int64_t i) {
      Kokkos::single(Kokkos::PerThread(team), [&]() {
        const std::int64_t r = I * tile_rows + i;
        if (i >= rows)
          alpha(r) = T(0);
        else if (finish_row(r, total[i]))
          Kokkos::atomic_add(absorbed, 1);
      });
    });
    team.team_barrier();
    if (*absorbed > 0)
      for (std::int64_t J = 0; J < costs.col_tiles; ++J) rebuild.build_tile(team, I, J);
    team.team_barrier();
    // Column tiles in reverse: the last ones read for the rows are still in cache.
    const T* a = alpha.data() + I * tile_rows;
    for (std::int64_t J = costs.col_tiles; J > 0; --J) column_tile(team, I, J - 1, rows, a, acc, limbs);
  }
#else
  /// The host's row tile I (one thread per team: Serial, OpenMP), in groups
  /// of scaling_stream_rows rows. Sweep g reads group g's rows for their sums
  /// and, from cache, adds group g − 1 (whose α the end of sweep g − 1 made)
  /// into acc, the row tile's column sums; the deposits follow the last sweep.
  /// Within a tile a group's rows are one contiguous run (1 KiB per row in
  /// fp32), and the group before is the run just read. Per row the column
  /// tiles are added in order and per column the rows in order, the first
  /// assigning: the bits of ScalingRowSweep and of scaled_column_sums.
  void row_tile_host(const TileMember& team, std::int64_t I, double* total, T* acc, std::int64_t* limbs) const {
    constexpr std::int64_t group = scaling_stream_rows;
    const TileCostData<T>& costs = row_part.costs;
    const std::int64_t rows = costs.rows_in(I), groups = (rows + group - 1) / group;
    const std::int64_t full = costs.cols / tile_cols;  // full-width column tiles, before the last partial one
    const T* tiles = row_part.kernel.data() + tile_offset(costs, I, 0);
    const T* beta = row_part.beta.data();
    const T* a = alpha.data() + I * tile_rows;
    for (std::int64_t i = 0; i < rows; ++i) total[i] = 0;
    for (std::int64_t i = rows; i < tile_rows; ++i) alpha(I * tile_rows + i) = T(0);
    for (std::int64_t g = 0; g <= groups; ++g) {
      const std::int64_t read0 = g * group, read1 = g < groups ? (read0 + group < rows ? read0 + group : rows) : read0;
      const std::int64_t add0 = (g - 1) * group, add1 = g > 0 ? (read0 < rows ? read0 : rows) : add0;
      const bool reads = read1 > read0, adds = add1 > add0;
      // Whole groups take the full-width tiles four rows at a time; the row
      // tile's last, partial group (and the sweep after it) and the partial
      // last column tile take the one-row forms, in tile order after them.
      const bool whole = (!reads || read1 - read0 == group) && (!adds || add1 - add0 == group);
      if (whole)
        scaling_tile_rows_axpy_host(reads ? tiles + read0 * tile_cols : nullptr, adds ? tiles + add0 * tile_cols : nullptr,
                                    tile_entries, tile_cols, full, beta, adds ? a + add0 : a, acc, add0 == 0,
                                    reads ? total + read0 : total);
      for (std::int64_t J = whole ? full : 0; J < costs.col_tiles; ++J) {
        const T* tile = tiles + J * tile_entries;
        const std::int64_t width = costs.cols_in(J);
        for (std::int64_t i = read0; i < read1; ++i)
          total[i] += static_cast<double>(scaling_dot_host(tile + i * tile_cols, beta + J * tile_cols, width));
        for (std::int64_t p = add0; p < add1; ++p)
          scaling_axpy_host(tile + p * tile_cols, width, a[p], acc + J * tile_cols, p == 0);
      }
      for (std::int64_t i = read0; i < read1; ++i)
        if (finish_row(I * tile_rows + i, total[i])) rebuild.build_row_host(I, i);
    }
    for (std::int64_t J = 0; J < costs.col_tiles; ++J) {  // a claimed row tile has a row at least
      const std::int64_t col0 = J * tile_cols;
      deposit_columns(team, limbs + col0 * column_limbs, acc + col0, scale.data() + col0, costs.cols_in(J));
    }
  }
#endif

  /// Column tile J's part of the column sums of row tile I, deposited.
  KOKKOS_INLINE_FUNCTION void column_tile(const TileMember& team, std::int64_t I, std::int64_t J, std::int64_t rows,
                                          const T* a, T* acc, std::int64_t* limbs) const {
    const TileCostData<T>& costs = row_part.costs;
    const std::int64_t width = costs.cols_in(J), col0 = J * tile_cols;
    scaled_column_sums(team, row_part.kernel.data() + tile_offset(costs, I, J), rows, width, a, acc);
    deposit_columns(team, limbs + col0 * column_limbs, acc, scale.data() + col0, width);
    team.team_barrier();
  }
};

}  // namespace kotml::ot::detail
