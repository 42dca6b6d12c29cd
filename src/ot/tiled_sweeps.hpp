#pragma once
// The sweeps of the tiled Sinkhorn: each is one Kokkos launch over a rank's
// tiles, one team per row tile (rows are the team's own) or per column tile
// (columns are the team's own), walking the other dimension's tiles in order.
// A tile comes from TileCostData::tile (stored, or computed into the team's
// scratch pad) and is used at once, while it is in cache.
//
// Notation: u_i = f_i/ε and h_j = g_j/ε (−∞ for a zero weight), s = 1/ε, so
// (f_i − c_ij)/ε = u_i − s·c_ij and T_ij = exp(u_i + h_j − s·c_ij).
//
// Determinism: a row's value is merged over column tiles in order by one team;
// a column's value is summed per row tile in row order, and tiles are combined
// in fixed point (UnitFixed, 4 limbs per column), exactly. No floating-point
// sum depends on the thread count, the rank count or the schedule.

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "kotml/core/math.hpp"
#include "kotml/core/types.hpp"
#include "kotml/dist/fixed_point.hpp"
#include "kotml/ot/fast_exp.hpp"
#include "kotml/ot/lse.hpp"
#include "scaling_host.hpp"
#include "tile_costs.hpp"

namespace kotml::ot::detail {

using TilePolicy = Kokkos::TeamPolicy<ExecSpace, Kokkos::Schedule<Kokkos::Dynamic>>;
using TileMember = TilePolicy::member_type;
using ScratchSpace = ExecSpace::scratch_memory_space;
template <class V>
using ScratchView = Kokkos::View<V*, ScratchSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
using Limbs = Kokkos::View<std::int64_t*, MemSpace>;
using ColumnFixed = dist::UnitFixed;
constexpr int column_limbs = ColumnFixed::limbs;

/// limbs[k·column_limbs, (k+1)·column_limbs) += acc[k]·scale[k] (scale null:
/// acc[k]) for k < width, each value ColumnFixed cannot hold poisoning its
/// column: by the team's threads on a device, vectorised on the host
/// (deposit_columns_host, the same bits). No other team adds to these limbs.
template <class T>
KOKKOS_INLINE_FUNCTION void deposit_columns(const TileMember& team, std::int64_t* limbs, const T* acc,
                                            const double* scale, std::int64_t width) {
#ifdef KOTML_DEVICE_PASS
  Kokkos::parallel_for(Kokkos::TeamThreadRange(team, width), [&](const std::int64_t k) {
    Kokkos::single(Kokkos::PerThread(team), [&]() {
      std::int64_t* limb = limbs + k * column_limbs;
      const double x = scale != nullptr ? static_cast<double>(acc[k]) * scale[k] : static_cast<double>(acc[k]);
      if (!ColumnFixed::deposit(limb, x)) ColumnFixed::poison(limb);
    });
  });
#else
  (void)team;
  deposit_columns_host(limbs, acc, scale, width);
#endif
}

/// One team per unit (row tile or column tile) with `scratch_bytes` of team
/// scratch: a single thread on host backends (the host SIMD copies vectorise inside a
/// tile), a team of threads with vector lanes on GPUs.
TilePolicy tile_policy(std::int64_t units, std::size_t scratch_bytes);

/// Scratch pad bytes for a tile of T plus `extra` bytes, rounded for alignment.
template <class T>
constexpr std::size_t tile_scratch_bytes(std::size_t extra) {
  return ((tile_entries * sizeof(T) + 127) / 128) * 128 + ((extra + 127) / 128) * 128 + 256;
}

/// Carves consecutive arrays out of a team's scratch pad.
struct ScratchCarver {
  ScratchSpace space;
  template <class V>
  KOKKOS_INLINE_FUNCTION V* take(std::int64_t count) const {
    return ScratchView<V>(space, count).data();
  }
};

// ------------------------------------------------------------------ rows

/// lse(i) = LSE_j (h_j − s·c_ij) for this rank's rows, in double. With a
/// guess (the row's log-sum-exp from the previous update, `shift`), one pass:
/// Σ_j exp(h_j − s·c_ij − shift_i) per column tile, added in order in double,
/// accepted when the total lies in [2^-20, 2^30]; otherwise (and without a
/// guess) the team redoes its row tile in two passes per column tile (maximum,
/// then shifted sum), merging the tiles' log-sum-exps in order. Either way a
/// row's value depends only on the row. With `row_cost_sum`, instead sums
/// Σ_j c_ij per row in double (for a relative ε).
template <class T>
struct RowSweep {
  TileCostData<T> costs;
  Vector<const T> h;  // padded to whole column tiles
  T s;
  Vector<double> lse;
  bool row_cost_sum = false;
  Vector<const double> shift;  // per local row; empty: no guess
  Vector<std::int32_t> redone;  // per row tile: set when the guess failed

  static std::size_t scratch_bytes() { return tile_scratch_bytes<T>(2 * tile_rows * sizeof(double) + 64); }

  KOKKOS_INLINE_FUNCTION bool guessed() const { return shift.extent(0) > 0 && !row_cost_sum; }

  KOKKOS_INLINE_FUNCTION void operator()(const TileMember& team) const {
    const std::int64_t I = team.league_rank();
    const std::int64_t rows = costs.rows_in(I);
    ScratchCarver pad{team.team_scratch(1)};
    T* buffer = pad.take<T>(tile_entries);
    double* top = pad.take<double>(tile_rows);
    double* sum = pad.take<double>(tile_rows);
    int* failed = pad.take<int>(1);
    if (guessed()) {
      sweep(team, I, rows, buffer, top, sum, true);
      if (accept_guess(team, I, rows, sum, failed)) return;
    }
    sweep(team, I, rows, buffer, top, sum, false);
    write(team, I, rows, top, sum);
  }

  /// Clears the row tile's (top, sum).
  KOKKOS_INLINE_FUNCTION void start(const TileMember& team, std::int64_t rows, double* top, double* sum) const {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows), [&](const std::int64_t i) {
      Kokkos::single(Kokkos::PerThread(team), [&]() {
        top[i] = -kmath::infinity<double>();
        sum[i] = 0;
      });
    });
    team.team_barrier();
  }

  /// One pass over the row tile's column tiles: shifted sums (one_pass), cost
  /// sums, or per-tile log-sum-exps merged into (top, sum).
  KOKKOS_INLINE_FUNCTION void sweep(const TileMember& team, std::int64_t I, std::int64_t rows, T* buffer,
                                    double* top, double* sum, bool one_pass) const {
    start(team, rows, top, sum);
    for (std::int64_t J = 0; J < costs.col_tiles; ++J) {
      add_tile(team, I, J, rows, costs.tile(team, I, J, buffer), top, sum, one_pass);
      team.team_barrier();
    }
  }

  /// Column tile J's part of each row's value (in order after tiles < J).
  KOKKOS_INLINE_FUNCTION void add_tile(const TileMember& team, std::int64_t I, std::int64_t J, std::int64_t rows,
                                       const T* tile, double* top, double* sum, bool one_pass) const {
    const std::int64_t width = costs.cols_in(J);
    const T* hj = h.data() + J * tile_cols;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows), [&](const std::int64_t i) {
      const T* c = tile + i * tile_cols;
      if (row_cost_sum) {
        double part = 0;
        Kokkos::parallel_reduce(
            Kokkos::ThreadVectorRange(team, width),
            [&](const std::int64_t j, double& local) { local += static_cast<double>(c[j]); }, part);
        Kokkos::single(Kokkos::PerThread(team), [&]() { sum[i] += part; });
        return;
      }
      if (one_pass) {
        const T part = row_sum(team, c, hj, width, s, static_cast<T>(shift(I * tile_rows + i)));
        Kokkos::single(Kokkos::PerThread(team), [&]() { sum[i] += static_cast<double>(part); });
        return;
      }
      const T piece = row_lse(team, c, hj, width, s, kmath::infinity<T>());
      Kokkos::single(Kokkos::PerThread(team), [&]() {
        const double value = static_cast<double>(piece);
        if (!(value > -kmath::infinity<double>())) return;
        if (value > top[i]) {
          sum[i] = sum[i] * kmath::exp(top[i] - value) + 1.0;
          top[i] = value;
        } else {
          sum[i] += kmath::exp(value - top[i]);
        }
      });
    });
  }

  /// After a one-pass sweep: writes every row's value and returns true when
  /// each shifted total lies in [2^-20, 2^30]; otherwise flags the row tile
  /// (its rows are then redone in two passes) and returns false.
  KOKKOS_INLINE_FUNCTION bool accept_guess(const TileMember& team, std::int64_t I, std::int64_t rows,
                                           const double* sum, int* failed) const {
    Kokkos::single(Kokkos::PerTeam(team), [&]() { *failed = 0; });
    team.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows), [&](const std::int64_t i) {
      Kokkos::single(Kokkos::PerThread(team), [&]() {
        const std::int64_t r = I * tile_rows + i;
        const double t = sum[i];
        if (t >= 0x1p-20 && t <= 0x1p30)
          lse(r) = static_cast<double>(static_cast<T>(shift(r))) + kmath::log(t);
        else
          Kokkos::atomic_add(failed, 1);
      });
    });
    team.team_barrier();
    if (*failed == 0) return true;
    Kokkos::single(Kokkos::PerTeam(team), [&]() { redone(I) = 1; });
    return false;
  }

  /// After a two-pass (or cost-sum) sweep: the rows' values.
  KOKKOS_INLINE_FUNCTION void write(const TileMember& team, std::int64_t I, std::int64_t rows, const double* top,
                                    const double* sum) const {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows), [&](const std::int64_t i) {
      Kokkos::single(Kokkos::PerThread(team), [&]() {
        const std::int64_t r = I * tile_rows + i;
        if (row_cost_sum)
          lse(r) = sum[i];
        else
          lse(r) = sum[i] > 0 ? top[i] + kmath::log(sum[i]) : -kmath::infinity<double>();
      });
    });
  }
};

// --------------------------------------------------------------- columns

/// For each column (one team per column tile, row tiles in order):
///   max mode: top(j) = max_i (u_i − s·c_ij) over this rank's rows;
///   sum mode: limbs(j) += Σ_i exp(u_i − s·c_ij − shift_j), one fixed-point
///             deposit per row tile (a partial that cannot be held poisons the
///             column, which the caller then treats as out of range).
template <class T>
struct ColumnSweep {
  TileCostData<T> costs;
  Vector<const T> u;      // padded to whole row tiles
  T s;
  Vector<const T> shift;  // sum mode
  Vector<T> top;          // max mode (padded)
  Limbs limbs;            // sum mode (padded columns × column_limbs)
  bool max_mode = false;

  static std::size_t scratch_bytes() { return tile_scratch_bytes<T>(2 * tile_cols * sizeof(T)); }

  KOKKOS_INLINE_FUNCTION void operator()(const TileMember& team) const {
    const std::int64_t J = team.league_rank();
    const std::int64_t width = costs.cols_in(J);
    ScratchCarver pad{team.team_scratch(1)};
    T* buffer = pad.take<T>(tile_entries);
    T* acc = pad.take<T>(tile_cols);
    T* local_shift = pad.take<T>(tile_cols);
    const std::int64_t col0 = J * tile_cols;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, width), [&](const std::int64_t k) {
      Kokkos::single(Kokkos::PerThread(team), [&]() {
        acc[k] = max_mode ? -kmath::infinity<T>() : T(0);
        local_shift[k] = max_mode ? T(0) : shift(col0 + k);
      });
    });
    team.team_barrier();
    for (std::int64_t I = 0; I < costs.row_tiles; ++I) {
      const T* tile = costs.tile(team, I, J, buffer);
      const std::int64_t rows = costs.rows_in(I);
      const T* ui = u.data() + I * tile_rows;
#ifdef KOTML_DEVICE_PASS
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, width), [&](const std::int64_t k) {
        Kokkos::single(Kokkos::PerThread(team), [&]() {
          if (max_mode)
            column_max_tile(tile + k, tile_cols, rows, 1, ui, s, acc + k);
          else
            column_sum_tile(tile + k, tile_cols, rows, 1, ui, s, local_shift + k, acc + k);
        });
      });
#else
      if (max_mode)
        column_max_tile_host(tile, tile_cols, rows, width, ui, s, acc);
      else
        column_sum_tile_host(tile, tile_cols, rows, width, ui, s, local_shift, acc);
#endif
      if (!max_mode) {
        deposit_columns(team, limbs.data() + col0 * column_limbs, acc, nullptr, width);
        team.team_barrier();
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, width), [&](const std::int64_t k) {
          Kokkos::single(Kokkos::PerThread(team), [&]() { acc[k] = T(0); });
        });
      }
      team.team_barrier();
    }
    if (max_mode)
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, width), [&](const std::int64_t k) {
        Kokkos::single(Kokkos::PerThread(team), [&]() { top(col0 + k) = acc[k]; });
      });
  }
};

// ------------------------------------------------------- both at once

/// One tile's shifted column sums Σ_i exp(u_i − s·c_ij − shift_j) over its
/// rows (in order, in T), each deposited into its column's limbs (`limbs` and
/// `shift` start at the tile's first column), atomically when other teams add
/// to the same limbs; `acc` is a scratch row of tile_cols. Ends with a team
/// barrier.
template <class T>
KOKKOS_INLINE_FUNCTION void deposit_column_sums(const TileMember& team, const T* tile, std::int64_t rows,
                                                std::int64_t width, const T* ui, T s, const T* shift, T* acc,
                                                std::int64_t* limbs, bool atomic) {
  Kokkos::parallel_for(Kokkos::TeamThreadRange(team, width), [&](const std::int64_t k) {
    Kokkos::single(Kokkos::PerThread(team), [&]() { acc[k] = T(0); });
  });
  team.team_barrier();
#ifdef KOTML_DEVICE_PASS
  Kokkos::parallel_for(Kokkos::TeamThreadRange(team, width), [&](const std::int64_t k) {
    Kokkos::single(Kokkos::PerThread(team),
                   [&]() { column_sum_tile(tile + k, tile_cols, rows, 1, ui, s, shift + k, acc + k); });
  });
#else
  column_sum_tile_host(tile, tile_cols, rows, width, ui, s, shift, acc);
#endif
  if (!atomic)
    deposit_columns(team, limbs, acc, nullptr, width);
  else
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, width), [&](const std::int64_t k) {
      Kokkos::single(Kokkos::PerThread(team), [&]() {
        std::int64_t* limb = limbs + k * column_limbs;
        if (!ColumnFixed::atomic_deposit(limb, static_cast<double>(acc[k]))) ColumnFixed::atomic_poison(limb);
      });
    });
  team.team_barrier();
}

/// The symmetric update's sweep: one pass per row tile gives both the row
/// log-sum-exps (as RowSweep, with h and its guessed shifts: a row tile whose
/// guess fails redoes its rows alone in two passes) and the shifted column sums
/// (as ColumnSweep's sum mode, with u and shift), the column deposits made
/// atomically since every team adds to every column.
template <class T>
struct BothSweep {
  RowSweep<T> row_part;  // costs, h, s, lse, guesses
  Vector<const T> u, shift;
  Limbs limbs;

  static std::size_t scratch_bytes() {
    return tile_scratch_bytes<T>(2 * tile_rows * sizeof(double) + tile_cols * sizeof(T) + 64);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const TileMember& team) const {
    const TileCostData<T>& costs = row_part.costs;
    const std::int64_t I = team.league_rank();
    const std::int64_t rows = costs.rows_in(I);
    ScratchCarver pad{team.team_scratch(1)};
    T* buffer = pad.take<T>(tile_entries);
    double* top = pad.take<double>(tile_rows);
    double* sum = pad.take<double>(tile_rows);
    T* acc = pad.take<T>(tile_cols);
    int* failed = pad.take<int>(1);
    const T* ui = u.data() + I * tile_rows;
    const bool guessed = row_part.guessed();
    row_part.start(team, rows, top, sum);
    for (std::int64_t J = 0; J < costs.col_tiles; ++J) {
      const T* tile = costs.tile(team, I, J, buffer);
      row_part.add_tile(team, I, J, rows, tile, top, sum, guessed);
      deposit_column_sums(team, tile, rows, costs.cols_in(J), ui, row_part.s, shift.data() + J * tile_cols, acc,
                          limbs.data() + J * tile_cols * column_limbs, true);
    }
    if (guessed) {
      if (row_part.accept_guess(team, I, rows, sum, failed)) return;
      row_part.sweep(team, I, rows, buffer, top, sum, false);
    }
    row_part.write(team, I, rows, top, sum);
  }
};

// ------------------------------------------------- alternating, one pass

/// The slots of a joint sweep: one team per slot (league = slots), each taking
/// row tiles from a shared counter until none is left, and depositing its
/// column sums into its own slot's limbs with plain adds (no other team
/// writes them); the slots' limbs are summed after the launch (integers: exact
/// in any order). Which team takes which row tile does not matter: a row's
/// values are its own.
struct JointSlots {
  Kokkos::View<std::int64_t, MemSpace> next;  // the next row tile to take, from 0
  Limbs limbs;                                // slots × padded_cols × column_limbs
  std::int64_t padded_cols = 0;

  /// The next row tile for the calling team (every thread gets the same);
  /// `claimed` is one int64 of the team's scratch.
  KOKKOS_INLINE_FUNCTION std::int64_t claim(const TileMember& team, std::int64_t* claimed) const {
    Kokkos::single(Kokkos::PerTeam(team), [&]() { *claimed = Kokkos::atomic_fetch_add(&next(), std::int64_t(1)); });
    team.team_barrier();
    const std::int64_t I = *claimed;
    team.team_barrier();
    return I;
  }

  /// The calling team's limbs, from column 0.
  KOKKOS_INLINE_FUNCTION std::int64_t* own(const TileMember& team) const {
    return limbs.data() + team.league_rank() * padded_cols * column_limbs;
  }
};

/// OTT's potential update pot = τ·(ε log w − ε·lse), a non-finite lse counting
/// as 0. One definition for the host's updates and the joint sweep's, so both
/// give the same bits (no contraction: -ffp-contract=off, -fmad=false).
KOKKOS_INLINE_FUNCTION double updated_potential(double log_w, double lse, double eps, double tau) {
  const double applied = kmath::isfinite(lse) ? eps * lse : 0.0;
  return tau * (eps * log_w - applied);
}

/// Alternating updates with one pass over the tiles per iteration. For each of
/// this rank's row tiles:
///   1. the row log-sum-exps with h, as RowSweep (guessed shifts, a failed
///      guess redone in two passes);
///   2. the rows' new potentials f_i = updated_potential(log a_i, lse_i) and
///      u_i = f_i/ε in T, written to f and u (−∞ past the last row);
///   3. the shifted column sums of the next column update with that u, as
///      ColumnSweep's sum mode (deposits atomic: every team adds to every
///      column).
/// Step 3 needs the tile row's costs after its row is complete, so recomputed
/// tiles are kept in a strip (one row tile × every column tile) owned by the
/// team; stored tiles are read again. Each tile is thus computed once per
/// iteration, where RowSweep then ColumnSweep compute it twice, and every value
/// is the same bits as theirs: the same operations per row and per (row tile,
/// column) partial, and exact column totals.
///
/// One team per strip (JointSlots).
template <class T>
struct JointSweep {
  RowSweep<T> row_part;       // costs, h, s, lse, guesses
  Vector<const double> log_a; // per local row
  double eps = 1, tau = 1;
  Vector<double> f;           // per local row
  Vector<T> u;                // padded to whole row tiles
  Vector<const T> shift;      // per padded column
  Vector<T> strips;           // slots × col_tiles × tile_entries; empty: the costs are stored
  JointSlots slots;

  static std::size_t scratch_bytes() {
    return tile_scratch_bytes<T>(2 * tile_rows * sizeof(double) + tile_cols * sizeof(T) + 128);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const TileMember& team) const {
    ScratchCarver pad{team.team_scratch(1)};
    double* top = pad.take<double>(tile_rows);
    double* sum = pad.take<double>(tile_rows);
    T* acc = pad.take<T>(tile_cols);
    int* failed = pad.take<int>(1);
    std::int64_t* claimed = pad.take<std::int64_t>(1);
    const TileCostData<T>& costs = row_part.costs;
    T* strip = strips.extent(0) > 0 ? strips.data() + team.league_rank() * costs.col_tiles * tile_entries : nullptr;
    std::int64_t* limbs = slots.own(team);
    for (;;) {
      const std::int64_t I = slots.claim(team, claimed);
      if (I >= costs.row_tiles) return;
      row_tile(team, I, strip, top, sum, acc, failed, limbs);
    }
  }

  /// Tile (I, J) of the current row tile: in the strip, or in storage.
  KOKKOS_INLINE_FUNCTION const T* tile_at(std::int64_t I, std::int64_t J, const T* strip) const {
    const TileCostData<T>& costs = row_part.costs;
    return strip != nullptr ? strip + J * tile_entries : costs.stored.data() + (I * costs.col_tiles + J) * tile_entries;
  }

  KOKKOS_INLINE_FUNCTION void row_tile(const TileMember& team, std::int64_t I, T* strip, double* top, double* sum,
                                       T* acc, int* failed, std::int64_t* limbs) const {
    const TileCostData<T>& costs = row_part.costs;
    const std::int64_t rows = costs.rows_in(I);
    const bool guessed = row_part.guessed();
    row_part.start(team, rows, top, sum);
    for (std::int64_t J = 0; J < costs.col_tiles; ++J) {
      if (strip != nullptr) costs.compute(team, I, J, strip + J * tile_entries);
      row_part.add_tile(team, I, J, rows, tile_at(I, J, strip), top, sum, guessed);
      team.team_barrier();
    }
    if (!(guessed && row_part.accept_guess(team, I, rows, sum, failed))) {
      row_part.start(team, rows, top, sum);
      for (std::int64_t J = 0; J < costs.col_tiles; ++J) {
        row_part.add_tile(team, I, J, rows, tile_at(I, J, strip), top, sum, false);
        team.team_barrier();
      }
      row_part.write(team, I, rows, top, sum);
    }
    team.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, tile_rows), [&](const std::int64_t i) {
      Kokkos::single(Kokkos::PerThread(team), [&]() {
        const std::int64_t r = I * tile_rows + i;
        if (i < rows) {
          const double fresh = updated_potential(log_a(r), row_part.lse(r), eps, tau);
          f(r) = fresh;
          u(r) = static_cast<T>(fresh / eps);
        } else {
          u(r) = -kmath::infinity<T>();
        }
      });
    });
    team.team_barrier();
    // Column tiles in reverse: the last ones written or read for the rows are still in cache.
    const T* ui = u.data() + I * tile_rows;
    for (std::int64_t J = costs.col_tiles - 1; J >= 0; --J)
      deposit_column_sums(team, tile_at(I, J, strip), rows, costs.cols_in(J), ui, row_part.s,
                          shift.data() + J * tile_cols, acc, limbs + J * tile_cols * column_limbs, false);
  }
};

// ------------------------------------------------------ plan applications

/// out(q, j) limbs += Σ_{i: group_i = q} T_ij·w_i, one deposit per (row tile,
/// group, column); one team per column tile of the chunk that starts at
/// column tile `first`. Groups < 0 are skipped.
template <class T>
struct GroupedColumnSweep {
  TileCostData<T> costs;
  Vector<const T> u, h;
  T s;
  Vector<const double> weight;        // per local row
  Vector<const std::int32_t> group;   // per local row
  std::int32_t groups = 1;
  std::int64_t first = 0;             // the chunk's first column tile
  std::int64_t chunk_cols = 0;        // its columns: tiles × tile_cols
  Limbs limbs;                        // groups × chunk_cols × column_limbs

  static std::size_t scratch_bytes(std::int32_t groups) {
    return tile_scratch_bytes<T>(static_cast<std::size_t>(groups) * tile_cols * sizeof(double) +
                                 tile_cols * sizeof(T) + 128);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const TileMember& team) const {
    const std::int64_t J = first + team.league_rank();
    const std::int64_t width = costs.cols_in(J);
    const std::int64_t col0 = J * tile_cols;
    const std::int64_t at = team.league_rank() * tile_cols;  // col0 within the chunk
    ScratchCarver pad{team.team_scratch(1)};
    T* buffer = pad.take<T>(tile_entries);
    double* acc = pad.take<double>(static_cast<std::int64_t>(groups) * tile_cols);
    T* plan = pad.take<T>(tile_cols);
    for (std::int64_t I = 0; I < costs.row_tiles; ++I) {
      const T* tile = costs.tile(team, I, J, buffer);
      const std::int64_t rows = costs.rows_in(I);
#ifndef KOTML_DEVICE_PASS
      // Host: a row of plan entries at a time (vectorised exps), added into its
      // group's sums column by column, rows in order as on devices.
      (void)team;
      for (std::int64_t k = 0; k < static_cast<std::int64_t>(groups) * tile_cols; ++k) acc[k] = 0;
      for (std::int64_t i = 0; i < rows; ++i) {
        const std::int64_t r = I * tile_rows + i;
        const std::int32_t q = group(r);
        if (q < 0) continue;
        plan_row_host(tile + i * tile_cols, h.data() + col0, width, u(r), s, plan);
        const double w = weight(r);
        double* into = acc + q * tile_cols;
        for (std::int64_t k = 0; k < width; ++k) into[k] += static_cast<double>(plan[k]) * w;
      }
      for (std::int32_t q = 0; q < groups; ++q)
        deposit_columns_host(limbs.data() + ((q * chunk_cols) + at) * column_limbs, acc + q * tile_cols, nullptr,
                             width);
#else
      (void)plan;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, width), [&](const std::int64_t k) {
        Kokkos::single(Kokkos::PerThread(team), [&]() {
          for (std::int32_t q = 0; q < groups; ++q) acc[q * tile_cols + k] = 0;
          const T hk = h(col0 + k);
          for (std::int64_t i = 0; i < rows; ++i) {
            const std::int64_t r = I * tile_rows + i;
            const std::int32_t q = group(r);
            if (q < 0) continue;
            acc[q * tile_cols + k] +=
                static_cast<double>(fast_exp(u(r) + hk - s * tile[i * tile_cols + k])) * weight(r);
          }
          for (std::int32_t q = 0; q < groups; ++q) {
            std::int64_t* limb = limbs.data() + ((q * chunk_cols) + at + k) * column_limbs;
            if (!ColumnFixed::deposit(limb, acc[q * tile_cols + k])) ColumnFixed::poison(limb);
          }
        });
      });
      team.team_barrier();
#endif
    }
  }
};

/// out(i, q) = Σ_{j: group_j = q} T_ij·v_j for this rank's rows, in double,
/// columns in order; one team per row tile.
template <class T>
struct GroupedRowSweep {
  TileCostData<T> costs;
  Vector<const T> u, h;
  T s;
  Vector<const double> weight;       // per column
  Vector<const std::int32_t> group;  // per column
  std::int32_t groups = 1;
  Matrix<double> out;                // local rows × groups

  static std::size_t scratch_bytes() { return tile_scratch_bytes<T>(tile_cols * sizeof(T) + 128); }

  KOKKOS_INLINE_FUNCTION void operator()(const TileMember& team) const {
    const std::int64_t I = team.league_rank();
    const std::int64_t rows = costs.rows_in(I);
    ScratchCarver pad{team.team_scratch(1)};
    T* buffer = pad.take<T>(tile_entries);
    T* plan = pad.take<T>(tile_cols);
    for (std::int64_t J = 0; J < costs.col_tiles; ++J) {
      const T* tile = costs.tile(team, I, J, buffer);
      const std::int64_t width = costs.cols_in(J);
      const std::int64_t col0 = J * tile_cols;
#ifndef KOTML_DEVICE_PASS
      // Host: the row's plan entries first (vectorised exps), then its groups.
      (void)team;
      for (std::int64_t i = 0; i < rows; ++i) {
        const std::int64_t r = I * tile_rows + i;
        plan_row_host(tile + i * tile_cols, h.data() + col0, width, u(r), s, plan);
        for (std::int64_t k = 0; k < width; ++k) {
          const std::int32_t q = group(col0 + k);
          if (q < 0) continue;
          out(r, q) += static_cast<double>(plan[k]) * weight(col0 + k);
        }
      }
#else
      (void)plan;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows), [&](const std::int64_t i) {
        Kokkos::single(Kokkos::PerThread(team), [&]() {
          const std::int64_t r = I * tile_rows + i;
          const T ur = u(r);
          for (std::int64_t k = 0; k < width; ++k) {
            const std::int32_t q = group(col0 + k);
            if (q < 0) continue;
            out(r, q) += static_cast<double>(fast_exp(ur + h(col0 + k) - s * tile[i * tile_cols + k])) *
                         weight(col0 + k);
          }
        });
      });
      team.team_barrier();
#endif
    }
  }
};

/// Per (row group, column group) block over selected cells: Σ T_ij, Σ T_ij c_ij,
/// Σ c_ij (each deposited per tile, atomically, in wide fixed point: plain cost
/// sums can be large) and the cell count.
using BlockFixed = dist::WideFixed;
constexpr int block_limbs = BlockFixed::limbs;

template <class T>
struct BlockSweep {
  TileCostData<T> costs;
  Vector<const T> u, h;
  T s;
  Vector<const std::int32_t> row_group, col_group;
  std::int32_t row_groups = 1, col_groups = 1;
  Limbs limbs;                                 // blocks × 3 × block_limbs
  Kokkos::View<std::int64_t*, MemSpace> count;  // blocks

  static std::size_t scratch_bytes(std::int64_t blocks) {
    return tile_scratch_bytes<T>(static_cast<std::size_t>(blocks) * (3 * sizeof(double) + sizeof(std::int64_t)) +
                                 tile_cols * sizeof(T) + 128);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const TileMember& team) const {
    const std::int64_t I = team.league_rank();
    const std::int64_t rows = costs.rows_in(I);
    const std::int64_t blocks = static_cast<std::int64_t>(row_groups) * col_groups;
    ScratchCarver pad{team.team_scratch(1)};
    T* buffer = pad.take<T>(tile_entries);
    double* acc = pad.take<double>(3 * blocks);
    std::int64_t* cells = pad.take<std::int64_t>(blocks);
    T* plan = pad.take<T>(tile_cols);
    for (std::int64_t J = 0; J < costs.col_tiles; ++J) {
      const T* tile = costs.tile(team, I, J, buffer);
      const std::int64_t width = costs.cols_in(J);
      const std::int64_t col0 = J * tile_cols;
      // One thread per tile: the block sums of a tile are few and tiny next to its exps.
      Kokkos::single(Kokkos::PerTeam(team), [&]() {
        for (std::int64_t b = 0; b < 3 * blocks; ++b) acc[b] = 0;
        for (std::int64_t b = 0; b < blocks; ++b) cells[b] = 0;
        for (std::int64_t i = 0; i < rows; ++i) {
          const std::int64_t r = I * tile_rows + i;
          const std::int32_t p = row_group(r);
          if (p < 0) continue;
#ifndef KOTML_DEVICE_PASS
          plan_row_host(tile + i * tile_cols, h.data() + col0, width, u(r), s, plan);
#endif
          for (std::int64_t k = 0; k < width; ++k) {
            const std::int32_t q = col_group(col0 + k);
            if (q < 0) continue;
            const std::int64_t b = static_cast<std::int64_t>(p) * col_groups + q;
            const T c = tile[i * tile_cols + k];
#ifndef KOTML_DEVICE_PASS
            const double t = static_cast<double>(plan[k]);
#else
            (void)plan;
            const double t = static_cast<double>(fast_exp(u(r) + h(col0 + k) - s * c));
#endif
            acc[3 * b] += t;
            acc[3 * b + 1] += t * static_cast<double>(c);
            acc[3 * b + 2] += static_cast<double>(c);
            ++cells[b];
          }
        }
        for (std::int64_t b = 0; b < blocks; ++b) {
          if (cells[b] == 0) continue;
          for (int v = 0; v < 3; ++v) {
            std::int64_t* limb = limbs.data() + (3 * b + v) * block_limbs;
            if (!BlockFixed::atomic_deposit(limb, acc[3 * b + v])) BlockFixed::atomic_poison(limb);
          }
          Kokkos::atomic_add(&count(b), cells[b]);
        }
      });
      team.team_barrier();
    }
  }
};


// ------------------------------------------------------------ gradients

/// The plan entry's weight in the gradient of a feature cost c = λ·φ(x, y):
/// ∂c/∂x = w·(x − y) per unit of plan with w = 2λ (sqeuclidean) or λ²/c
/// (euclidean, φ = ‖x − y‖ = c/λ; 0 where c = 0). `scale` is 2λ or λ².
template <class T>
KOKKOS_INLINE_FUNCTION double gradient_weight(double plan, T c, double scale, bool squared) {
  if (squared) return scale * plan;
  return c > T(0) ? scale * plan / static_cast<double>(c) : 0.0;
}

#ifndef KOTML_DEVICE_PASS
/// Host: one row's plan entries in a tile (vectorised exps) and their gradient weights.
template <class T>
inline void gradient_weights_host(const T* c, const T* h, std::int64_t width, T u, T s, double scale, bool squared,
                                  T* plan, double* w) {
  plan_row_host(c, h, width, u, s, plan);
  for (std::int64_t k = 0; k < width; ++k) w[k] = gradient_weight(static_cast<double>(plan[k]), c[k], scale, squared);
}
#endif

/// ∂/∂x_i = Σ_j w_ij (x_i − y_j) for this rank's rows (one team per row tile,
/// column tiles in order), into out (local rows × d, zeroed by the caller).
/// Per tile and row the host sums over the tile's columns per coordinate, then
/// adds that into the row's total; devices add entry by entry.
template <class T>
struct RowGradientSweep {
  TileCostData<T> costs;
  Vector<const T> u, h;
  T s;
  double scale;
  bool squared;
  Matrix<double> out;

  static std::size_t scratch_bytes() { return tile_scratch_bytes<T>(tile_cols * (sizeof(T) + sizeof(double)) + 128); }

  KOKKOS_INLINE_FUNCTION void operator()(const TileMember& team) const {
    const std::int64_t I = team.league_rank();
    const std::int64_t rows = costs.rows_in(I);
    const int dim = costs.dim;
    ScratchCarver pad{team.team_scratch(1)};
    T* buffer = pad.take<T>(tile_entries);
    T* plan = pad.take<T>(tile_cols);
    double* w = pad.take<double>(tile_cols);
    for (std::int64_t J = 0; J < costs.col_tiles; ++J) {
      const T* tile = costs.tile(team, I, J, buffer);
      const std::int64_t width = costs.cols_in(J);
      const std::int64_t col0 = J * tile_cols;
      const T* y = costs.y_packed.data() + J * dim * tile_cols;  // y[k·256 + c]
#ifndef KOTML_DEVICE_PASS
      (void)team;
      for (std::int64_t i = 0; i < rows; ++i) {
        const std::int64_t r = I * tile_rows + i;
        gradient_weights_host(tile + i * tile_cols, h.data() + col0, width, u(r), s, scale, squared, plan, w);
        for (int q = 0; q < dim; ++q) {
          const double xq = static_cast<double>(costs.x(r, q));
          const T* yq = y + q * tile_cols;
          double acc = 0;
          for (std::int64_t k = 0; k < width; ++k) acc += w[k] * (xq - static_cast<double>(yq[k]));
          out(r, q) += acc;
        }
      }
#else
      (void)plan;
      (void)w;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows), [&](const std::int64_t i) {
        Kokkos::single(Kokkos::PerThread(team), [&]() {
          const std::int64_t r = I * tile_rows + i;
          const T* c = tile + i * tile_cols;
          for (std::int64_t k = 0; k < width; ++k) {
            const double p = static_cast<double>(fast_exp(u(r) + h(col0 + k) - s * c[k]));
            const double wk = gradient_weight(p, c[k], scale, squared);
            if (wk == 0) continue;
            for (int q = 0; q < dim; ++q)
              out(r, q) += wk * (static_cast<double>(costs.x(r, q)) - static_cast<double>(y[q * tile_cols + k]));
          }
        });
      });
      team.team_barrier();
#endif
    }
  }
};

/// ∂/∂y_j = Σ_i w_ij (y_j − x_i) for the column tiles [first, first + league):
/// one team per column tile, row tiles in order; each row tile's sums are
/// deposited in wide fixed point (limbs: ((J − first)·256 + c)·d + q), so the
/// totals over ranks are exact and do not depend on the rank count.
using GradientFixed = dist::WideFixed;

template <class T>
struct ColumnGradientSweep {
  TileCostData<T> costs;
  Vector<const T> u, h;
  T s;
  double scale;
  bool squared;
  std::int64_t first = 0;
  Limbs limbs;

  static std::size_t scratch_bytes(int dim) {
    return tile_scratch_bytes<T>(tile_cols * (sizeof(T) + sizeof(double) * (static_cast<std::size_t>(dim) + 1)) + 128);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const TileMember& team) const {
    const std::int64_t J = first + team.league_rank();
    const std::int64_t width = costs.cols_in(J);
    const std::int64_t col0 = J * tile_cols;
    const int dim = costs.dim;
    ScratchCarver pad{team.team_scratch(1)};
    T* buffer = pad.take<T>(tile_entries);
    T* plan = pad.take<T>(tile_cols);
    double* w = pad.take<double>(tile_cols);
    double* acc = pad.take<double>(static_cast<std::int64_t>(dim) * tile_cols);  // acc[q·256 + c]
    const T* y = costs.y_packed.data() + J * dim * tile_cols;
    std::int64_t* own = limbs.data() + team.league_rank() * tile_cols * dim * GradientFixed::limbs;
    for (std::int64_t I = 0; I < costs.row_tiles; ++I) {
      const T* tile = costs.tile(team, I, J, buffer);
      const std::int64_t rows = costs.rows_in(I);
#ifndef KOTML_DEVICE_PASS
      (void)team;
      for (std::int64_t e = 0; e < static_cast<std::int64_t>(dim) * tile_cols; ++e) acc[e] = 0;
      for (std::int64_t i = 0; i < rows; ++i) {
        const std::int64_t r = I * tile_rows + i;
        gradient_weights_host(tile + i * tile_cols, h.data() + col0, width, u(r), s, scale, squared, plan, w);
        for (int q = 0; q < dim; ++q) {
          const double xq = static_cast<double>(costs.x(r, q));
          const T* yq = y + q * tile_cols;
          double* into = acc + q * tile_cols;
          for (std::int64_t k = 0; k < width; ++k) into[k] += w[k] * (static_cast<double>(yq[k]) - xq);
        }
      }
      for (std::int64_t k = 0; k < width; ++k)
        for (int q = 0; q < dim; ++q) {
          std::int64_t* limb = own + (k * dim + q) * GradientFixed::limbs;
          if (!GradientFixed::deposit(limb, acc[q * tile_cols + k])) GradientFixed::poison(limb);
        }
#else
      (void)plan;
      (void)w;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, width), [&](const std::int64_t k) {
        Kokkos::single(Kokkos::PerThread(team), [&]() {
          for (int q = 0; q < dim; ++q) acc[q * tile_cols + k] = 0;
          const T hk = h(col0 + k);
          for (std::int64_t i = 0; i < rows; ++i) {
            const std::int64_t r = I * tile_rows + i;
            const T c = tile[i * tile_cols + k];
            const double wk = gradient_weight(static_cast<double>(fast_exp(u(r) + hk - s * c)), c, scale, squared);
            if (wk == 0) continue;
            for (int q = 0; q < dim; ++q)
              acc[q * tile_cols + k] +=
                  wk * (static_cast<double>(y[q * tile_cols + k]) - static_cast<double>(costs.x(r, q)));
          }
          for (int q = 0; q < dim; ++q) {
            std::int64_t* limb = own + (k * dim + q) * GradientFixed::limbs;
            if (!GradientFixed::deposit(limb, acc[q * tile_cols + k])) GradientFixed::poison(limb);
          }
        });
      });
      team.team_barrier();
#endif
    }
  }
};

}  // namespace kotml::ot::detail
