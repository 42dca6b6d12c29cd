#include "kotml/ot/tiled_sinkhorn.hpp"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>

#include "kotml/core/error.hpp"
#include "kotml/core/log.hpp"
#include "kotml/core/phase_timers.hpp"
#include "kotml/core/progress.hpp"
#include "kotml/core/region.hpp"
#include "kotml/core/simulation.hpp"
#include "kotml/dist/exact_sum.hpp"
#include "tiled_scaling.hpp"
#include "tiled_sweeps.hpp"

namespace kotml::ot {

// ------------------------------------------------------------- small parts

RowBlock RowBlock::of(std::int64_t total, int ranks, int rank) {
  const std::int64_t tiles = (total + tile_rows - 1) / tile_rows;
  const std::int64_t per = tiles / ranks, extra = tiles % ranks;
  const std::int64_t first = rank * per + std::min<std::int64_t>(rank, extra);
  const std::int64_t last = first + per + (rank < extra ? 1 : 0);
  RowBlock block;
  block.total = total;
  block.begin = std::min(first * tile_rows, total);
  block.count = std::min(last * tile_rows, total) - block.begin;
  return block;
}

const char* storage_name(CostStorage storage) {
  switch (storage) {
    case CostStorage::automatic: return "automatic";
    case CostStorage::stored: return "stored";
    case CostStorage::online: return "online";
  }
  return "?";
}

CostStorage parse_storage(const std::string& name, const std::string& option) {
  for (auto s : {CostStorage::automatic, CostStorage::stored, CostStorage::online})
    if (name == storage_name(s)) return s;
  throw Error::option(option, "must be automatic, stored or online, got '" + name + "'");
}

const char* updates_name(DualUpdates updates) {
  return updates == DualUpdates::alternating ? "alternating" : "symmetric";
}

DualUpdates parse_updates(const std::string& name, const std::string& option) {
  if (name == "alternating") return DualUpdates::alternating;
  if (name == "symmetric") return DualUpdates::symmetric;
  throw Error::option(option, "must be alternating or symmetric, got '" + name + "'");
}

void TiledSinkhornOptions::validate() const {
  if (!(epsilon > 0) || !std::isfinite(epsilon))
    throw Error::option("epsilon", "must be positive and finite, got " + log::number_text(epsilon));
  if (!(tau_a > 0 && tau_a <= 1)) throw Error::option("tau-a", "must be in (0, 1], got " + log::number_text(tau_a));
  if (!(tau_b > 0 && tau_b <= 1)) throw Error::option("tau-b", "must be in (0, 1], got " + log::number_text(tau_b));
  if (!(threshold >= 0) || !std::isfinite(threshold))
    throw Error::option("threshold", "must be zero or positive, got " + log::number_text(threshold));
  if (inner_iterations < 1)
    throw Error::option("inner-iterations", "must be at least 1, got " + std::to_string(inner_iterations));
  if (max_iterations < 1)
    throw Error::option("max-iter", "must be at least 1, got " + std::to_string(max_iterations));
  if (!(epsilon_init >= 1) || !std::isfinite(epsilon_init))
    throw Error::option("epsilon-init", "must be at least 1 (a multiple of epsilon), got " +
                                            log::number_text(epsilon_init));
  if (!(epsilon_decay > 0 && epsilon_decay <= 1))
    throw Error::option("epsilon-decay", "must be in (0, 1], got " + log::number_text(epsilon_decay));
  if (domain == SinkhornDomain::scaling && updates == DualUpdates::symmetric)
    throw Error::option("sinkhorn-domain",
                        "the scaling domain runs alternating updates; use --updates alternating or --sinkhorn-domain log");
  if (domain == SinkhornDomain::scaling && storage == CostStorage::online)
    throw Error::option("sinkhorn-domain", "the scaling domain needs stored costs, not --cost-storage online");
}

template <class T>
std::int64_t count_non_finite(const Matrix<const T>& points) {
  const std::int64_t dim = points.extent(1);
  std::int64_t bad = 0;
  Kokkos::parallel_reduce(
      "kotml::ot::count_non_finite", Kokkos::RangePolicy<ExecSpace>(0, points.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i, std::int64_t& count) {
        for (std::int64_t k = 0; k < dim; ++k)
          if (!kmath::isfinite(points(i, k))) ++count;
      },
      bad);
  return bad;
}

template std::int64_t count_non_finite<float>(const Matrix<const float>&);
template std::int64_t count_non_finite<double>(const Matrix<const double>&);

std::size_t default_cost_memory(const dist::Comm& comm) {
  std::size_t available = std::size_t(4) << 30;
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    if (line.rfind("MemAvailable:", 0) == 0) {
      std::istringstream fields(line.substr(13));
      std::size_t kib = 0;
      if (fields >> kib) available = kib * 1024;
      break;
    }
  }
  MPI_Comm node;
  MPI_Comm_split_type(comm.raw(), MPI_COMM_TYPE_SHARED, comm.rank(), MPI_INFO_NULL, &node);
  int local = 1;
  MPI_Comm_size(node, &local);
  MPI_Comm_free(&node);
  return available / static_cast<std::size_t>(std::max(local, 1)) / 4;
}

namespace detail {

TilePolicy tile_policy(std::int64_t units, std::size_t scratch_bytes) {
  TilePolicy policy = [&] {
    if constexpr (std::is_same<ExecSpace::memory_space, HostSpace>::value)
      return TilePolicy(static_cast<int>(units), 1, 1);
    else
      return TilePolicy(static_cast<int>(units), Kokkos::AUTO, 32);
  }();
  return policy.set_scratch_size(1, Kokkos::PerTeam(static_cast<int>(scratch_bytes)));
}

namespace {

/// Fills the stored costs: one team per tile.
template <class T>
struct FillTiles {
  TileCostData<T> costs;  // stored empty: compute
  Vector<T> stored;

  KOKKOS_INLINE_FUNCTION void operator()(const TileMember& team) const {
    const std::int64_t I = team.league_rank() / costs.col_tiles, J = team.league_rank() % costs.col_tiles;
    costs.compute(team, I, J, stored.data() + (I * costs.col_tiles + J) * tile_entries);
  }
};

/// The largest squared norm of a point set's rows (double), 0 when empty.
template <class T>
double largest_squared_norm(const Matrix<const T>& points) {
  const std::int64_t dim = points.extent(1);
  double top = 0;
  Kokkos::parallel_reduce(
      "kotml::ot::tiled_largest_norm", Kokkos::RangePolicy<ExecSpace>(0, points.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i, double& best) {
        double s = 0;
        for (std::int64_t k = 0; k < dim; ++k) s += static_cast<double>(points(i, k)) * static_cast<double>(points(i, k));
        if (s > best) best = s;
      },
      Kokkos::Max<double>(top));
  return top;
}

/// How many row tiles flagged that their guessed shift failed (flags are 0 or 1).
/// A free function: nvcc refuses device lambdas inside the engine's private Impl.
std::int32_t count_flagged(const Kokkos::View<const std::int32_t*, MemSpace>& flags) {
  std::int32_t flagged = 0;
  Kokkos::parallel_reduce(
      "kotml::ot::tiled_rows_redone", Kokkos::RangePolicy<ExecSpace>(0, flags.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t tile, std::int32_t& count) { count += flags(tile); }, flagged);
  return flagged;
}

/// limbs = Σ over the slots of their limbs (integers: exact in any order).
void sum_slot_limbs(const JointSlots& slots, const Limbs& limbs) {
  const std::int64_t length = slots.padded_cols * column_limbs;
  const std::int64_t count = length > 0 ? static_cast<std::int64_t>(slots.limbs.extent(0)) / length : 0;
  const Limbs source = slots.limbs;
  Kokkos::parallel_for(
      "kotml::ot::tiled_joint_sum_slots", Kokkos::RangePolicy<ExecSpace>(0, length), KOKKOS_LAMBDA(const std::int64_t e) {
        std::int64_t total = 0;
        for (std::int64_t slot = 0; slot < count; ++slot) total += source(slot * length + e);
        limbs(e) = total;
      });
}

template <class V>
std::vector<typename V::non_const_value_type> to_host(const V& view) {
  auto mirror = Kokkos::create_mirror_view_and_copy(HostSpace(), view);
  return std::vector<typename V::non_const_value_type>(mirror.data(), mirror.data() + mirror.extent(0));
}

template <class T>
void copy_to(const Vector<T>& view, const std::vector<T>& host) {
  Kokkos::deep_copy(view, Kokkos::View<const T*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                              host.data(), host.size()));
}

}  // namespace
}  // namespace detail

// ------------------------------------------------------------------ engine

template <class T>
struct TiledSinkhorn<T>::Impl {
  using Data = detail::TileCostData<T>;
  static constexpr std::int64_t tile_rows = detail::tile_rows;
  static constexpr std::int64_t tile_cols = detail::tile_cols;
  // A shifted column total is accepted in this range: the shift was close
  // enough that no term overflowed and the largest is a normal number.
  static constexpr double accept_low = 0x1p-20, accept_high = 0x1p30;

  const dist::Comm* comm = nullptr;
  RowBlock rows;
  std::int64_t m = 0;
  PointCost cost;
  TiledSinkhornOptions options;
  Data data;
  Vector<T> stored;
  // What keeps y's packed copy alive when a simulated run folds it
  // (core/simulation.hpp); empty otherwise.
  std::shared_ptr<void> y_packed_memory;
  std::size_t stored_bytes = 0, budget = 0;
  bool storing = false;  // the costs are stored (on every rank alike)

  std::vector<double> a, b, log_a, log_b;  // this rank's rows; all columns
  std::vector<double> f, g;                // potentials (OTT convention)
  Vector<T> u, h;                          // f/ε, g/ε (padded, −∞ past the end)
  Vector<double> lse_row;                  // this rank's rows
  Vector<double> row_guess;                // the last row log-sum-exps, as shifts
  bool have_row_guess = false;
  Kokkos::View<std::int32_t*, MemSpace> redone;  // per row tile: its guess failed
  Vector<T> shift, top;                    // per padded column
  detail::Limbs limbs;                     // padded columns × column_limbs

  // The last column log-sum-exps (for f as it is now, at eps_of_col) and the
  // last row log-sum-exps (for g as it is now, at eps_of_row).
  std::vector<double> col_lse, row_lse;
  double eps_of_col = -1, eps_of_row = -1;
  bool have_shift = false;

  double epsilon = -1;
  double cost_bound = 0;  // an upper bound of |c_ij|, from the points' norms
  std::int64_t sweeps = 0, retries = 0;

  // The joint pass of alternating updates (detail::JointSweep): decided at
  // set-up, alike on every rank; one strip per slot when costs are recomputed.
  struct JointState {
    bool allowed = false;
    std::int64_t slots = 0;
    std::size_t strip_bytes = 0;  // the largest rank's (reported)
    Vector<T> strips;
    Vector<double> log_a, f;      // per local row
    detail::JointSlots slots_state;  // the claim counter and each slot's column limbs
    std::int64_t passes = 0;
    std::shared_ptr<void> strips_memory, limbs_memory;  // set where a simulated run folds them
  } joint;

  // The scaling domain (header comment): K̃ next to the stored costs, the
  // absorbed potentials f̄ and ḡ (held in double, each equal to its T rounding)
  // and the per-column scale exponents of the column sums.
  struct ScalingState {
    bool allowed = false;  // stored costs, room for K̃, alternating updates, not the log domain by name
    bool decided = false;  // the automatic choice was made (at the first build)
    bool active = false;   // K̃ is built for the ε in `eps`
    bool failed = false;   // fell back to the log domain for good
    bool used = false;     // a half-step of this solve ran in this domain
    double eps = -1;
    Vector<T> kernel;
    std::vector<double> f_bar, g_bar;
    Vector<T> f_bar_d, g_bar_d, alpha, beta;
    Vector<double> low, span, scale;
    Kokkos::View<std::int32_t*, MemSpace> selected;  // per local row: rebuild it
    std::vector<int> col_exp;
    bool have_exp = false;
    std::int64_t builds = 0, absorbed = 0, columns_absorbed = 0;
  } sc;

  std::int64_t padded_rows() const { return data.row_tiles * tile_rows; }
  std::int64_t padded_cols() const { return data.col_tiles * tile_cols; }

  /// The joint pass (JointSweep) for alternating updates: stored tiles serve
  /// it as they are; recomputed ones need one strip (a row tile × every column
  /// tile) per slot, which must fit the same budget as stored costs. Slots:
  /// one per host thread, or one per 1024 device threads, at most one per row
  /// tile. Agreed over ranks; a rank that cannot allocate turns it off for all.
  void plan_joint_pass(std::size_t local_budget) {
    if (options.updates != DualUpdates::alternating || !options.joint_passes) return;
    const std::int64_t concurrency = ExecSpace().concurrency();
    const std::int64_t units = std::is_same<ExecSpace::memory_space, HostSpace>::value
                                   ? concurrency
                                   : std::max<std::int64_t>(1, concurrency / 1024);
    joint.slots = std::min(data.row_tiles, units);
    const std::size_t bytes =
        storing ? 0 : static_cast<std::size_t>(joint.slots * data.col_tiles) * detail::tile_entries * sizeof(T);
    const std::size_t limb_bytes =
        static_cast<std::size_t>(joint.slots * padded_cols() * detail::column_limbs) * sizeof(std::int64_t);
    joint.strip_bytes = static_cast<std::size_t>(comm->max(static_cast<std::int64_t>(bytes)));
    if (!comm->all(bytes + limb_bytes <= local_budget)) return;
    // Both are scratch of the joint pass's compute block, which a simulated
    // run that folds shares among its ranks where their sizes agree (they
    // follow the slots). Only such a run asks (folding is alike on all ranks).
    bool same_size = false;
    if (sim::folding()) {
      double extremes[2] = {static_cast<double>(joint.slots), -static_cast<double>(joint.slots)};
      comm->max_in_place(extremes, 2);
      same_size = extremes[0] == -extremes[1];
    }
    bool allocated = true;
    try {
      auto strips = sim::block_scratch<T>("kotml::ot::tiled_joint_strips", bytes / sizeof(T), same_size);
      auto slot_limbs = sim::block_scratch<std::int64_t>("kotml::ot::tiled_joint_slot_limbs",
                                                         limb_bytes / sizeof(std::int64_t), same_size);
      joint.strips = strips.view;
      joint.strips_memory = strips.memory;
      joint.slots_state.limbs = slot_limbs.view;
      joint.limbs_memory = slot_limbs.memory;
    } catch (const std::exception&) {
      allocated = false;
    }
    joint.allowed = comm->all(allocated);
    if (!joint.allowed) {
      joint.strips = Vector<T>();
      joint.slots_state = detail::JointSlots();
      joint.strips_memory = joint.limbs_memory = nullptr;
      return;
    }
    std::vector<double> log_rows(log_a);
    log_rows.resize(static_cast<std::size_t>(std::max<std::int64_t>(rows.count, 1)), 0.0);
    joint.log_a = Vector<double>(no_init("kotml::ot::tiled_joint_log_a"), log_rows.size());
    detail::copy_to(joint.log_a, log_rows);
    joint.f = Vector<double>(no_init("kotml::ot::tiled_joint_f"), log_rows.size());
    joint.slots_state.next = Kokkos::View<std::int64_t, MemSpace>("kotml::ot::tiled_joint_next");
    joint.slots_state.padded_cols = padded_cols();
  }

  // ---------------------------------------------------------- scaling

  void scale_rows(const std::vector<double>& pot, double eps) {
    std::vector<T> host(static_cast<std::size_t>(padded_rows()), -std::numeric_limits<T>::infinity());
    for (std::size_t i = 0; i < pot.size(); ++i) host[i] = static_cast<T>(pot[i] / eps);
    detail::copy_to(u, host);
  }
  void scale_cols(const std::vector<double>& pot, double eps) {
    std::vector<T> host(static_cast<std::size_t>(padded_cols()), -std::numeric_limits<T>::infinity());
    for (std::size_t j = 0; j < pot.size(); ++j) host[j] = static_cast<T>(pot[j] / eps);
    detail::copy_to(h, host);
  }

  /// This rank's rows of a per-row buffer. Buffers hold at least one entry
  /// (a rank without rows still launches), which is never written there: it
  /// must not be read (it made a relative epsilon depend on the rank count).
  std::vector<double> local_rows_of(const Vector<double>& per_row) const {
    auto values = detail::to_host(per_row);
    values.resize(static_cast<std::size_t>(rows.count));
    return values;
  }

  // ----------------------------------------------------------- sweeps

  // The engine's own phases, nested in the caller's (`kotml map`'s "solve"
  // shows "solve/tiles", "solve/allreduce", "solve/error"): the tile sweeps,
  // which are all of the O(rows·m) work; the allreduces of fixed-point column
  // totals (and of column maxima, gradients, block sums), whose size is m on
  // every rank whatever the rank count; and the error checks. What is left of
  // the caller's phase is host work on the potentials, O(rows + m) per
  // half-step.

  /// A tile sweep's kernels as sim::compute runs them, timed as "tiles".
  template <class Body, class... Outputs>
  void compute(const char* site, Body&& body, const Outputs&... outputs) {
    const timers::Scope timed("tiles");
    sim::compute(site, std::forward<Body>(body), outputs...);
  }

  /// The row sweep at eps into lse_row, guessing each row's shift from its last
  /// log-sum-exp where there is one (cost sums take none), redo flags cleared.
  detail::RowSweep<T> row_sweep(double eps, bool cost_sums) {
    const bool guessed = have_row_guess && !cost_sums;
    if (guessed) Kokkos::deep_copy(redone, 0);
    return {data, h, static_cast<T>(1.0 / eps), lse_row, cost_sums,
            guessed ? Vector<const double>(row_guess) : Vector<const double>(), redone};
  }

  /// After a row sweep (alone or inside the symmetric one): counts a retry if a
  /// guessed row tile was redone, and keeps the log-sum-exps as the next guesses.
  void row_sweep_done(const detail::RowSweep<T>& sweep) {
    if (sweep.guessed()) retries += detail::count_flagged(redone) > 0 ? 1 : 0;
    if (sweep.row_cost_sum) return;
    Kokkos::deep_copy(row_guess, lse_row);
    have_row_guess = true;
  }

  void launch_rows(double eps, bool cost_sums) {
    const auto sweep = row_sweep(eps, cost_sums);
    compute("kotml::ot::tiled_rows", [&] {
      Kokkos::parallel_for("kotml::ot::tiled_rows", detail::tile_policy(data.row_tiles, sweep.scratch_bytes()), sweep);
      Kokkos::fence();
    }, lse_row, redone);
    ++sweeps;
    row_sweep_done(sweep);
  }

  /// LSE_j (g_j − c_ij)/eps for this rank's rows; each becomes the row's shift
  /// (guess) for the next row update.
  std::vector<double> rows_lse(double eps) {
    if (scaling_wanted(eps) && !scaling_ready(eps)) build_kernel(eps);
    if (scaling_ready(eps)) {
      std::vector<double> lse;
      if (scaling_rows(eps, lse)) return lse;
      scaling_fall_back();
    }
    ProfilingRegion region("kotml::ot::tiled_row_update");
    scale_cols(g, eps);
    launch_rows(eps, false);
    return local_rows_of(lse_row);
  }

  void launch_columns(double eps, bool max_mode) {
    detail::ColumnSweep<T> sweep{data, u, static_cast<T>(1.0 / eps), shift, top, limbs, max_mode};
    compute("kotml::ot::tiled_columns", [&] {
      if (!max_mode) Kokkos::deep_copy(limbs, std::int64_t(0));
      Kokkos::parallel_for("kotml::ot::tiled_columns", detail::tile_policy(data.col_tiles, sweep.scratch_bytes()),
                           sweep);
      Kokkos::fence();
    }, top, limbs);
    ++sweeps;
  }

  /// `top` (per padded column, this rank's maxima), maximised over ranks.
  typename Vector<T>::HostMirror all_column_maxima() {
    const timers::Scope timed("allreduce");
    auto host = Kokkos::create_mirror_view_and_copy(HostSpace(), top);
    if (comm->size() > 1)
      MPI_Allreduce(MPI_IN_PLACE, host.data(), static_cast<int>(host.extent(0)),
                    std::is_same<T, float>::value ? MPI_FLOAT : MPI_DOUBLE, MPI_MAX, comm->raw());
    return host;
  }

  /// Column maxima over all ranks, as the shifts.
  void exact_shifts(double eps) {
    launch_columns(eps, true);
    auto host = all_column_maxima();
    for (std::int64_t j = 0; j < m; ++j)
      if (!(host(j) > -std::numeric_limits<T>::infinity())) host(j) = T(0);  // no mass: any shift
    Kokkos::deep_copy(shift, host);
  }

  /// Sums `values` fixed-point numbers (Fixed::limbs limbs each, per rank)
  /// exactly over ranks; returns them in double.
  template <class Fixed>
  std::vector<double> reduce_limbs(const detail::Limbs& source, std::int64_t values) const {
    const timers::Scope timed("allreduce");
    return dist::allreduce_fixed<Fixed>(comm, source, values);
  }

  /// The column totals of the sweeps (ColumnFixed), over ranks.
  std::vector<double> reduce_columns(const detail::Limbs& source, std::int64_t columns) const {
    return reduce_limbs<detail::ColumnFixed>(source, columns);
  }

  // ------------------------------------------------------ point gradients

  /// This rank's rows of ∂/∂x (count × d), from u and h as scaled now.
  std::vector<double> row_gradients(T inv_eps, double scale, bool squared) const {
    const int dim = data.dim;
    Matrix<double> out("kotml::ot::tiled_row_gradients", std::max<std::int64_t>(rows.count, 1), dim);
    detail::RowGradientSweep<T> sweep{data, u, h, inv_eps, scale, squared, out};
    Kokkos::parallel_for("kotml::ot::tiled_row_gradients", detail::tile_policy(data.row_tiles, sweep.scratch_bytes()),
                         sweep);
    Kokkos::fence();
    const auto host = Kokkos::create_mirror_view_and_copy(HostSpace(), out);
    return std::vector<double>(host.data(), host.data() + rows.count * dim);
  }

  /// Column tiles per chunk of a column sweep whose tiles hold `limbs_per_tile`
  /// limbs each: about options.column_chunk_bytes of them, at least one tile.
  std::int64_t column_chunk_tiles(std::int64_t limbs_per_tile) const {
    const auto bytes = static_cast<std::int64_t>(std::min<std::size_t>(options.column_chunk_bytes, std::size_t(1) << 40));
    return std::max<std::int64_t>(1, bytes / (limbs_per_tile * static_cast<std::int64_t>(sizeof(std::int64_t))));
  }

  /// Every column of ∂/∂y (m × d), summed exactly over ranks; column tiles in
  /// chunks (column_chunk_tiles), so the limbs stay bounded whatever m is.
  std::vector<double> column_gradients(T inv_eps, double scale, bool squared) const {
    using Fixed = detail::GradientFixed;
    const int dim = data.dim;
    const std::int64_t per_tile = tile_cols * dim * Fixed::limbs;
    const std::int64_t chunk = column_chunk_tiles(per_tile);
    std::vector<double> out(static_cast<std::size_t>(m * dim), 0.0);
    for (std::int64_t first = 0; first < data.col_tiles; first += chunk) {
      const std::int64_t tiles = std::min(chunk, data.col_tiles - first);
      detail::Limbs limbs("kotml::ot::tiled_column_gradient_limbs", tiles * per_tile);
      detail::ColumnGradientSweep<T> sweep{data, u, h, inv_eps, scale, squared, first, limbs};
      Kokkos::parallel_for("kotml::ot::tiled_column_gradients", detail::tile_policy(tiles, sweep.scratch_bytes(dim)),
                           sweep);
      Kokkos::fence();
      const auto sums = reduce_limbs<Fixed>(limbs, tiles * tile_cols * dim);
      const std::int64_t col0 = first * tile_cols;
      const std::int64_t cols = std::min(tiles * tile_cols, m - col0);
      std::copy(sums.begin(), sums.begin() + cols * dim, out.begin() + col0 * dim);
    }
    for (const double v : out)
      if (!(std::fabs(v) < std::ldexp(1.0, Fixed::highest_exponent)))
        throw Error("", "plan", "a column gradient is not finite or too large to be held exactly");
    return out;
  }

  /// Turns shifted totals into log-sum-exps; false if a total is out of range.
  bool finish_columns(const std::vector<double>& total, std::vector<double>& lse, bool strict) {
    auto shifts = detail::to_host(shift);
    lse.assign(static_cast<std::size_t>(m), 0.0);
    for (std::int64_t j = 0; j < m; ++j) {
      const double t = total[static_cast<std::size_t>(j)];
      if (strict && !(t >= accept_low && t <= accept_high)) return false;
      lse[static_cast<std::size_t>(j)] =
          t > 0 ? static_cast<double>(shifts[static_cast<std::size_t>(j)]) + std::log(t) : -std::numeric_limits<double>::infinity();
    }
    return true;
  }

  /// LSE_i (f_i − c_ij)/eps over every rank's rows, for all columns; identical
  /// bits on every rank and for any rank count.
  std::vector<double> columns_lse(double eps) {
    if (scaling_ready(eps)) {
      std::vector<double> lse;
      if (scaling_columns(eps, lse)) return lse;
      scaling_fall_back();
    }
    ProfilingRegion region("kotml::ot::tiled_column_update");
    scale_rows(f, eps);
    std::vector<double> lse;
    if (have_shift)
      set_shifts_from(col_lse);
    else
      exact_shifts(eps);
    launch_columns(eps, false);
    columns_from_limbs(eps, lse, have_shift);
    have_shift = true;
    return lse;
  }

  /// The column log-sum-exps from the shifted totals in `limbs` (over ranks).
  /// With guessed shifts (`guessed`), a total out of range counts a retry and
  /// the columns are summed again with the exact maxima as shifts (u as now).
  void columns_from_limbs(double eps, std::vector<double>& lse, bool guessed) {
    if (finish_columns(reduce_columns(limbs, padded_cols()), lse, guessed)) return;
    ++retries;
    exact_shifts(eps);
    launch_columns(eps, false);
    finish_columns(reduce_columns(limbs, padded_cols()), lse, false);
  }

  void set_shifts_from(const std::vector<double>& lse) {
    std::vector<T> host(static_cast<std::size_t>(padded_cols()), T(0));
    for (std::int64_t j = 0; j < m; ++j) {
      const double v = lse[static_cast<std::size_t>(j)];
      host[static_cast<std::size_t>(j)] = std::isfinite(v) ? static_cast<T>(v) : T(0);
    }
    detail::copy_to(shift, host);
  }

  /// A joint pass serves an alternating iteration at eps: in the scaling
  /// domain once K̃ is built and the columns have exponents, in the log domain
  /// once the columns have shifts (those of the column update just made).
  bool joint_ready(double eps) const {
    if (!joint.allowed) return false;
    if (scaling_wanted(eps)) return scaling_ready(eps) && sc.have_exp;
    return have_shift;
  }

  /// f's update and, when the result says so, col_lse for the new f.
  bool joint_step(double eps) {
    if (scaling_ready(eps)) return scaling_joint_update(eps);
    joint_update(eps);
    return true;
  }

  /// Zeroes the slots' limbs and the row tile counter before a joint pass.
  void start_slots() {
    Kokkos::deep_copy(joint.slots_state.limbs, std::int64_t(0));
    Kokkos::deep_copy(joint.slots_state.next, std::int64_t(0));
  }

  /// f's update from g (as rows_lse then update) and the column log-sum-exps
  /// of the next column update at the same eps (as columns_lse), in one pass.
  void joint_update(double eps) {
    ProfilingRegion region("kotml::ot::tiled_joint_update");
    scale_cols(g, eps);
    set_shifts_from(col_lse);
    const detail::JointSweep<T> sweep{row_sweep(eps, false), joint.log_a, eps,       options.tau_a,
                                      joint.f,               u,           shift,     joint.strips,
                                      joint.slots_state};
    compute("kotml::ot::tiled_joint", [&] {
      start_slots();
      Kokkos::parallel_for("kotml::ot::tiled_joint", detail::tile_policy(joint.slots, sweep.scratch_bytes()), sweep);
      Kokkos::fence();
      detail::sum_slot_limbs(joint.slots_state, limbs);
    }, limbs, lse_row, joint.f, redone);
    ++sweeps;
    ++joint.passes;
    row_sweep_done(sweep.row_part);
    row_lse = local_rows_of(lse_row);
    f = local_rows_of(joint.f);
    columns_from_limbs(eps, col_lse, true);
  }

  /// Both log-sum-exps from one sweep (symmetric updates).
  void both_lse(double eps, std::vector<double>& rows_out, std::vector<double>& cols_out) {
    ProfilingRegion region("kotml::ot::tiled_both_updates");
    scale_rows(f, eps);
    scale_cols(g, eps);
    if (!have_shift) exact_shifts(eps);
    else set_shifts_from(col_lse);
    const detail::BothSweep<T> sweep{row_sweep(eps, false), u, shift, limbs};
    compute("kotml::ot::tiled_both", [&] {
      Kokkos::deep_copy(limbs, std::int64_t(0));
      Kokkos::parallel_for("kotml::ot::tiled_both", detail::tile_policy(data.row_tiles, sweep.scratch_bytes()), sweep);
      Kokkos::fence();
    }, limbs, lse_row, redone);
    ++sweeps;
    row_sweep_done(sweep.row_part);
    rows_out = local_rows_of(lse_row);
    columns_from_limbs(eps, cols_out, have_shift);
    have_shift = true;
  }

  // ---------------------------------------------------- scaling domain

  /// The scaling domain serves half-steps at the target ε only.
  bool scaling_wanted(double eps) const { return sc.allowed && !sc.failed && eps == epsilon; }
  bool scaling_ready(double eps) const { return scaling_wanted(eps) && sc.active && sc.eps == eps; }

  void scaling_fall_back() {
    sc.failed = true;
    sc.active = false;
    sc.kernel = Vector<T>();
    log::info("sinkhorn: the scaling domain failed (a zero or non-finite scaled sum); the log domain finishes the solve");
  }

  /// Rounds `values` to T in place (so that each equals what the kernels read)
  /// and copies them into `view`, zeros past their end.
  static void round_and_upload(std::vector<double>& values, const Vector<T>& view) {
    std::vector<T> host(view.extent(0), T(0));
    for (std::size_t k = 0; k < values.size(); ++k) {
      host[k] = static_cast<T>(values[k]);
      values[k] = static_cast<double>(host[k]);
    }
    detail::copy_to(view, host);
  }

  void launch_kernel(double eps, bool selected_only) {
    detail::KernelSweep<T> sweep{data, sc.kernel, sc.f_bar_d, sc.g_bar_d, static_cast<T>(1.0 / eps),
                                 selected_only ? Kokkos::View<const std::int32_t*, MemSpace>(sc.selected)
                                               : Kokkos::View<const std::int32_t*, MemSpace>(),
                                 {}};
    compute("kotml::ot::tiled_scaling_kernel", [&] {
      Kokkos::parallel_for("kotml::ot::tiled_scaling_kernel", detail::tile_policy(data.row_tiles, 0), sweep);
      Kokkos::fence();
    });
    ++sweeps;
  }

  /// Builds K̃ for every row from the current g (ḡ = g) with the row shifts
  /// f̄_i = min_j (c_ij − ḡ_j). The first build makes the automatic choice and
  /// allocates K̃; when the choice is the log domain, nothing is built.
  void build_kernel(double eps) {
    ProfilingRegion region("kotml::ot::tiled_scaling_build");
    sc.g_bar.assign(static_cast<std::size_t>(m), 0.0);
    for (std::size_t k = 0; k < sc.g_bar.size(); ++k)
      if (b[k] > 0 && std::isfinite(g[k])) sc.g_bar[k] = g[k];
    round_and_upload(sc.g_bar, sc.g_bar_d);
    detail::RowRangeSweep<T> ranges{data, sc.g_bar_d, sc.low, sc.span};
    compute("kotml::ot::tiled_scaling_ranges", [&] {
      Kokkos::parallel_for("kotml::ot::tiled_scaling_ranges",
                           detail::tile_policy(data.row_tiles, ranges.scratch_bytes()), ranges);
      Kokkos::fence();
    }, sc.low, sc.span);
    ++sweeps;
    const auto low = local_rows_of(sc.low);
    const bool choosing = !sc.decided && options.domain == SinkhornDomain::automatic;
    if (!sc.decided) {
      sc.decided = true;
      if (choosing && !comm->all(all_finite(low))) {
        sc.allowed = false;
        return;
      }
      allocate_kernel();
    }
    sc.f_bar.assign(static_cast<std::size_t>(rows.count), 0.0);
    for (std::size_t k = 0; k < sc.f_bar.size(); ++k)
      if (std::isfinite(low[k])) sc.f_bar[k] = low[k];
    round_and_upload(sc.f_bar, sc.f_bar_d);
    launch_kernel(eps, false);
    if (choosing && !columns_representable(eps)) {
      sc.allowed = false;
      sc.kernel = Vector<T>();
      return;
    }
    ++sc.builds;
    sc.active = true;
    sc.eps = eps;
    sc.have_exp = false;
  }

  static bool all_finite(const std::vector<double>& values) {
    for (double v : values)
      if (!std::isfinite(v)) return false;
    return true;
  }

  void allocate_kernel() {
    const auto entries = static_cast<std::size_t>(data.row_tiles * data.col_tiles) * detail::tile_entries;
    comm->phase([&] {
      if (entries == 0) return;
      try {
        sc.kernel = Vector<T>(no_init("kotml::ot::tiled_scaling_kernel"), entries);
      } catch (const std::exception&) {
        throw Error("", "sinkhorn-domain", "the scaling domain's kernel takes " + std::to_string(entries * sizeof(T)) +
                                               " bytes on this rank, more than can be allocated; use --sinkhorn-domain log");
      }
    });
  }

  /// The automatic choice, on the first K̃: every column of positive weight
  /// keeps an entry of at least 2^−ScalingLimits<T>::column_floor (the rows
  /// have 1 by construction), so the entries that exp flushes to zero are a
  /// negligible part of every S_j and R_i however wide the cost range is.
  bool columns_representable(double eps) {
    std::vector<T> unit_alpha(static_cast<std::size_t>(padded_rows()), T(0));  // 1 where the weight is positive
    for (std::int64_t i = 0; i < rows.count; ++i)
      if (a[static_cast<std::size_t>(i)] > 0) unit_alpha[static_cast<std::size_t>(i)] = T(1);
    detail::copy_to(sc.alpha, unit_alpha);
    launch_scaling_columns(true);
    const auto maxima = all_column_maxima();
    const double floor = std::ldexp(1.0, -detail::ScalingLimits<T>::column_floor);
    T least = std::numeric_limits<T>::infinity();
    for (std::int64_t j = 0; j < m; ++j)
      if (b[static_cast<std::size_t>(j)] > 0) least = std::min(least, maxima(j));
    if (log::verbose()) {
      double widest = 0;
      for (double w : local_rows_of(sc.span)) widest = std::max(widest, w);
      log::info("sinkhorn: first scaling kernel: widest row range " + log::scientific_text(comm->max(widest) / eps) +
                " eps, smallest column maximum " + log::scientific_text(static_cast<double>(least)));
    }
    return static_cast<double>(least) >= floor;
  }

  /// β_j = exp((g_j − ḡ_j)/ε) (0 for a zero weight) into `beta`. A β outside
  /// [2^−Θ, 2^Θ] but within [2^−2Θ, 2^2Θ] is absorbed: ḡ_j = absorbed_g_bar,
  /// β_j = 2^∓¾Θ, and the column is listed in `absorb` (its entries of K̃ move
  /// by the old β and 2^±¾Θ). Returns false when a β is outside [2^−2Θ,
  /// 2^2Θ]: then K̃ is rebuilt whole. Every rank reaches the same answer.
  bool column_scalings(double eps, std::vector<T>& beta, std::vector<std::int64_t>& absorb) {
    const double bound = detail::ScalingLimits<T>::bound;
    beta.assign(static_cast<std::size_t>(padded_cols()), T(0));
    absorb.clear();
    bool in_range = true;
    for (std::int64_t j = 0; j < m; ++j) {
      const auto k = static_cast<std::size_t>(j);
      if (!(b[k] > 0)) continue;
      double v = std::exp((g[k] - sc.g_bar[k]) / eps);
      if ((v > bound && v <= bound * bound) || (v < 1 / bound && v >= 1 / (bound * bound))) {
        absorb.push_back(j);
        v = std::exp((g[k] - absorbed_g_bar(k, eps)) / eps);
      } else if (!(v >= 1 / bound && v <= bound)) {
        in_range = false;
      }
      beta[k] = static_cast<T>(v);
    }
    return in_range;
  }

  /// The ḡ_j that column k takes when it absorbs its β (read before ḡ moves):
  /// g_j carried on by ¾Θ ln 2·ε the way g_j has drifted from ḡ_j, rounded to
  /// T. β restarts at 2^∓¾Θ instead of 1, so a column whose g keeps drifting
  /// one way (most do while the solve is far from its fixed point) is absorbed
  /// 1.75 times less often; every bound on K̃, α and β above still holds,
  /// since β stays in [2^−Θ, 2^Θ].
  double absorbed_g_bar(std::size_t k, double eps) const {
    const double lead = 0.75 * std::log(detail::ScalingLimits<T>::bound) * eps;
    return static_cast<double>(static_cast<T>(g[k] > sc.g_bar[k] ? g[k] + lead : g[k] - lead));
  }

  /// LSE_j (g_j − c_ij)/ε = log R_i − f̄_i/ε for this rank's rows; false (on
  /// every rank) when some R_i of a positive weight is zero or not finite.
  bool scaling_rows(double eps, std::vector<double>& lse) {
    ProfilingRegion region("kotml::ot::tiled_scaling_row_update");
    upload_column_scalings(eps);
    detail::ScalingRowSweep<T> sweep{data, sc.kernel, sc.beta, lse_row};
    compute("kotml::ot::tiled_scaling_rows", [&] {
      Kokkos::parallel_for("kotml::ot::tiled_scaling_rows", detail::tile_policy(data.row_tiles, sweep.scratch_bytes()),
                           sweep);
      Kokkos::fence();
    }, lse_row);
    ++sweeps;
    return rows_from_sums(eps, lse);
  }

  /// β from g into sc.beta: columns absorbed one by one where they can be,
  /// K̃ rebuilt around g otherwise.
  void upload_column_scalings(double eps) {
    std::vector<T> beta;
    std::vector<std::int64_t> absorb;
    if (!column_scalings(eps, beta, absorb)) {
      if (log::verbose()) log::info("sinkhorn: scaling kernel rebuilt around g: (g − ḡ)/ε spans " + drift_text(eps));
      build_kernel(eps);  // ḡ = g: every β is 1
      column_scalings(eps, beta, absorb);
    }
    if (!absorb.empty()) absorb_columns(eps, absorb);
    detail::copy_to(sc.beta, beta);
  }

  /// "[low, high]": the range of (g_j − ḡ_j)/ε over the columns of positive weight.
  std::string drift_text(double eps) const {
    double low = std::numeric_limits<double>::infinity(), high = -low;
    for (std::int64_t j = 0; j < m; ++j) {
      const auto k = static_cast<std::size_t>(j);
      if (!(b[k] > 0)) continue;
      low = std::min(low, (g[k] - sc.g_bar[k]) / eps);
      high = std::max(high, (g[k] - sc.g_bar[k]) / eps);
    }
    return "[" + log::scientific_text(low) + ", " + log::scientific_text(high) + "]";
  }

  /// ḡ_j = absorbed_g_bar for the listed columns, their entries of K̃
  /// recomputed, and their column-sum exponents moved by the same factor.
  void absorb_columns(double eps, const std::vector<std::int64_t>& columns) {
    ProfilingRegion region("kotml::ot::tiled_scaling_absorb_columns");
    for (const std::int64_t j : columns) {
      const auto k = static_cast<std::size_t>(j);
      const double fresh = absorbed_g_bar(k, eps);
      const double moved = fresh - sc.g_bar[k];
      sc.g_bar[k] = fresh;
      if (k < sc.col_exp.size()) sc.col_exp[k] += static_cast<int>(std::lround(moved / eps / std::log(2.0)));
    }
    round_and_upload(sc.g_bar, sc.g_bar_d);
    Kokkos::View<std::int64_t*, MemSpace> listed(no_init("kotml::ot::tiled_scaling_absorbed_columns"),
                                                 columns.size());
    detail::copy_to(listed, columns);
    detail::KernelSweep<T> sweep{data, sc.kernel, sc.f_bar_d, sc.g_bar_d, static_cast<T>(1.0 / eps), {}, listed};
    compute("kotml::ot::tiled_scaling_absorb_columns", [&] {
      Kokkos::parallel_for("kotml::ot::tiled_scaling_absorb_columns", detail::tile_policy(data.row_tiles, 0), sweep);
      Kokkos::fence();
    });
    sc.columns_absorbed += static_cast<std::int64_t>(columns.size());
    if (log::verbose())
      log::info("sinkhorn: " + std::to_string(columns.size()) + " columns of K̃ absorbed");
  }

  /// lse_i = log R_i − f̄_i/ε from the row sums R in lse_row; false (on every
  /// rank) when some R_i of a positive weight is zero or not finite.
  bool rows_from_sums(double eps, std::vector<double>& lse) {
    const auto sums = local_rows_of(lse_row);
    bool held = true;
    lse.resize(sums.size());
    for (std::size_t i = 0; i < sums.size(); ++i) {
      if (a[i] > 0 && !(sums[i] > 0 && std::isfinite(sums[i]))) held = false;
      lse[i] = std::log(sums[i]) - sc.f_bar[i] / eps;
    }
    if (!comm->all(held)) return false;
    sc.used = true;
    return true;
  }

  /// α_i = exp((f_i − f̄_i)/ε) (0 for a zero weight) into `alpha`; a row whose
  /// α leaves [2^−Θ, 2^Θ] absorbs it (f̄_i = f_i, its row of K̃ rebuilt).
  void row_scalings(double eps) {
    const double bound = detail::ScalingLimits<T>::bound;
    std::vector<T> alpha(static_cast<std::size_t>(padded_rows()), T(0));
    std::vector<std::int32_t> pick(static_cast<std::size_t>(std::max<std::int64_t>(rows.count, 1)), 0);
    std::int64_t picked = 0;
    for (std::int64_t i = 0; i < rows.count; ++i) {
      const auto k = static_cast<std::size_t>(i);
      if (!(a[k] > 0)) continue;
      double v = std::exp((f[k] - sc.f_bar[k]) / eps);
      if (!(v >= 1 / bound && v <= bound) && std::isfinite(f[k])) {
        sc.f_bar[k] = static_cast<double>(static_cast<T>(f[k]));
        v = std::exp((f[k] - sc.f_bar[k]) / eps);
        pick[k] = 1;
        ++picked;
      }
      alpha[k] = static_cast<T>(v);
    }
    detail::copy_to(sc.alpha, alpha);
    if (picked == 0) return;
    round_and_upload(sc.f_bar, sc.f_bar_d);
    detail::copy_to(sc.selected, pick);
    launch_kernel(eps, true);
    sc.absorbed += picked;
  }

  void launch_scaling_columns(bool max_mode) {
    detail::ScalingColumnSweep<T> sweep{data, sc.kernel, sc.alpha, sc.scale, top, limbs, max_mode};
    compute("kotml::ot::tiled_scaling_columns", [&] {
      if (!max_mode) Kokkos::deep_copy(limbs, std::int64_t(0));
      Kokkos::parallel_for("kotml::ot::tiled_scaling_columns", detail::tile_policy(data.col_tiles, sweep.scratch_bytes()),
                           sweep);
      Kokkos::fence();
    }, top, limbs);
    ++sweeps;
  }

  void set_column_scales() {
    std::vector<double> scale(static_cast<std::size_t>(padded_cols()), 1.0);
    for (std::int64_t j = 0; j < m; ++j)
      scale[static_cast<std::size_t>(j)] = std::ldexp(1.0, -sc.col_exp[static_cast<std::size_t>(j)]);
    detail::copy_to(sc.scale, scale);
  }

  /// LSE_i (f_i − c_ij)/ε = log S_j − ḡ_j/ε over every rank's rows, identical
  /// bits on every rank; false (on every rank) when some S_j of a positive
  /// weight is zero or not finite.
  bool scaling_columns(double eps, std::vector<double>& lse) {
    ProfilingRegion region("kotml::ot::tiled_scaling_column_update");
    row_scalings(eps);
    std::vector<double> total;
    bool accepted = false;
    if (sc.have_exp) {
      set_column_scales();
      launch_scaling_columns(false);
      total = reduce_columns(limbs, padded_cols());
      accepted = scaled_totals_accepted(total);
    }
    return finish_scaling_columns(accepted, total, eps, lse);
  }

  /// Whether every column of positive weight has its scaled total in
  /// [accept_low, accept_high]; a retry is counted when not.
  bool scaled_totals_accepted(const std::vector<double>& total) {
    for (std::int64_t j = 0; j < m; ++j) {
      const double t = total[static_cast<std::size_t>(j)];
      if (b[static_cast<std::size_t>(j)] > 0 && !(t >= accept_low && t <= accept_high)) {
        ++retries;
        return false;
      }
    }
    return true;
  }

  /// The column log-sum-exps from accepted scaled totals, or (not accepted)
  /// from totals summed again with the exact column maxima's exponents.
  bool finish_scaling_columns(bool accepted, std::vector<double> total, double eps, std::vector<double>& lse) {
    if (!accepted) {
      launch_scaling_columns(true);
      const auto maxima = all_column_maxima();
      sc.col_exp.assign(static_cast<std::size_t>(m), 0);
      for (std::int64_t j = 0; j < m; ++j) {
        const double v = static_cast<double>(maxima(j));
        if (v > 0 && std::isfinite(v)) sc.col_exp[static_cast<std::size_t>(j)] = std::ilogb(v);
      }
      set_column_scales();
      launch_scaling_columns(false);
      total = reduce_columns(limbs, padded_cols());
    }
    bool held = true;
    lse.resize(static_cast<std::size_t>(m));
    for (std::int64_t j = 0; j < m; ++j) {
      const auto k = static_cast<std::size_t>(j);
      const double sum = std::ldexp(total[k], sc.col_exp[k]);
      const bool usable = sum > 0 && std::isfinite(sum);
      if (b[k] > 0 && !usable) held = false;
      lse[k] = std::log(sum) - sc.g_bar[k] / eps;
      if (usable) sc.col_exp[k] = std::ilogb(sum);
    }
    sc.have_exp = true;
    if (held) sc.used = true;
    return held;
  }

  /// The scaling domain's joint pass: scaling_rows, the f update,
  /// row_scalings and scaling_columns in that order, reading K̃ from memory
  /// once. f is always updated; returns whether col_lse belongs to the new f
  /// (false when the rows failed and the log domain took over).
  bool scaling_joint_update(double eps) {
    ProfilingRegion region("kotml::ot::tiled_scaling_joint_update");
    upload_column_scalings(eps);
    const bool scaled = sc.have_exp;  // a rebuilt K̃ has no exponents yet: the maxima decide
    if (scaled) set_column_scales();
    const detail::ScalingJointSweep<T> sweep{
        {data, sc.kernel, sc.beta, lse_row},
        {data, sc.kernel, sc.f_bar_d, sc.g_bar_d, static_cast<T>(1.0 / eps), sc.selected, {}},
        sc.f_bar_d, sc.selected, joint.log_a, eps, options.tau_a, joint.f, sc.alpha, sc.scale, joint.slots_state};
    compute("kotml::ot::tiled_scaling_joint", [&] {
      start_slots();
      Kokkos::parallel_for("kotml::ot::tiled_scaling_joint",
                           detail::tile_policy(joint.slots, sweep.scratch_bytes()), sweep);
      Kokkos::fence();
      detail::sum_slot_limbs(joint.slots_state, limbs);
    }, limbs, lse_row, joint.f, sc.alpha, sc.f_bar_d, sc.selected);
    ++sweeps;
    ++joint.passes;
    // The rows, as scaling_rows: lse from R and the f̄ they were summed with
    // (sc.f_bar, not yet the absorbed one).
    std::vector<double> lse;
    if (!rows_from_sums(eps, lse)) {
      scaling_fall_back();
      row_lse = rows_lse(eps);
      update(f, log_a, row_lse, eps, options.tau_a, false);
      return false;
    }
    row_lse = std::move(lse);
    f = local_rows_of(joint.f);
    // The absorptions, as row_scalings: f̄ comes back only when rows moved it.
    const std::int32_t picked = rows.count > 0 ? detail::count_flagged(sc.selected) : 0;
    if (picked > 0) {
      const auto f_bar_now = detail::to_host(sc.f_bar_d);
      for (std::size_t i = 0; i < sc.f_bar.size(); ++i) sc.f_bar[i] = static_cast<double>(f_bar_now[i]);
      sc.absorbed += picked;
    }
    // The columns, as scaling_columns.
    auto total = reduce_columns(limbs, padded_cols());
    const bool accepted = scaled && scaled_totals_accepted(total);
    if (!finish_scaling_columns(accepted, std::move(total), eps, col_lse)) {
      scaling_fall_back();
      col_lse = columns_lse(eps);
    }
    return true;
  }

  // ---------------------------------------------------------- updates

  double eps_at(int iteration) const {
    if (options.epsilon_init <= 1.0 || options.epsilon_decay >= 1.0) return epsilon;
    const double multiple = std::max(options.epsilon_init * std::pow(options.epsilon_decay, iteration), 1.0);
    return multiple * epsilon;
  }

  /// pot ← τ·(eps·log w − eps·LSE), OTT's update_potential (a non-finite LSE
  /// counts as 0); with `average`, half-and-half with the old value.
  static void update(std::vector<double>& pot, const std::vector<double>& log_w, const std::vector<double>& lse,
                     double eps, double tau, bool average) {
    for (std::size_t i = 0; i < pot.size(); ++i) {
      const double fresh = detail::updated_potential(log_w[i], lse[i], eps, tau);
      if (average) {
        const double old = std::isfinite(pot[i]) ? pot[i] : 0.0;
        pot[i] = 0.5 * old + 0.5 * fresh;
      } else {
        pot[i] = fresh;
      }
    }
  }

  /// Σ |exp(pot/ε + lse) − ∇| over one side, ∇ = w·exp(−pot/ρ) (w when τ = 1);
  /// NaN when any term is not finite. For this rank's rows (`distributed`) the
  /// sum runs over every rank, exactly; columns are summed alike on each rank.
  double side_error(const std::vector<double>& pot, const std::vector<double>& lse, const std::vector<double>& w,
                    double tau, bool distributed) const {
    const double rho = tau < 1.0 ? epsilon * tau / (1.0 - tau) : 0.0;
    dist::ExactSum total(1);
    double serial = 0;
    bool bad = false;
    for (std::size_t i = 0; i < pot.size(); ++i) {
      const double marginal = w[i] > 0 ? std::exp(pot[i] / epsilon + lse[i]) : 0.0;
      const double target = tau < 1.0 ? (w[i] > 0 ? w[i] * std::exp(-pot[i] / rho) : 0.0) : w[i];
      const double e = std::fabs(marginal - target);
      if (!std::isfinite(e)) {
        bad = true;
        continue;
      }
      if (distributed)
        total.add(0, e);
      else
        serial += e;
    }
    if (distributed) {
      const double sum = total.allreduce(*comm)[0];
      return comm->any(bad) ? std::numeric_limits<double>::quiet_NaN() : sum;
    }
    return bad ? std::numeric_limits<double>::quiet_NaN() : serial;
  }

  double error(bool both_sides) {
    const timers::Scope timed("error");
    const double cols = side_error(g, col_lse, b, options.tau_b, false);
    if (!both_sides) return cols;
    return side_error(f, row_lse, a, options.tau_a, true) + cols;
  }

  // -------------------------------------------------------------- solve

  /// The solver's state as `saved` holds it (a sampled simulated run's
  /// replay): its host values and which buffers it uses, not their contents;
  /// the counts of work done go on counting.
  void restore_state(const Impl& saved) {
    const auto counts = std::make_tuple(sweeps, retries, sc.builds, sc.absorbed, sc.columns_absorbed, joint.passes);
    *this = saved;
    std::tie(sweeps, retries, sc.builds, sc.absorbed, sc.columns_absorbed, joint.passes) = counts;
  }

  TiledSinkhornReport solve() {
    ProfilingRegion region("kotml::ot::tiled_sinkhorn");
    Kokkos::Timer timer;
    const double target = resolve_epsilon();
    TiledSinkhornReport report;
    report.epsilon = target;
    report.stored = storing;
    report.stored_bytes = stored_bytes;
    report.cost_memory = budget;
    const bool symmetric = options.updates == DualUpdates::symmetric;
    const bool both_sides = symmetric || !options.balanced();
    const std::int64_t sweeps_before = sweeps, retries_before = retries;
    const std::int64_t builds_before = sc.builds, absorbed_before = sc.absorbed;
    const std::int64_t columns_before = sc.columns_absorbed;
    const std::int64_t joint_before = joint.passes;
    sc.used = false;
    report.status = SolveStatus::max_iter;
    // Whole blocks of inner iterations, each ending with a check (OTT's
    // fixed-point loop): the limit rounds up to a multiple of the block.
    const int blocks = (options.max_iterations + options.inner_iterations - 1) / options.inner_iterations;
    const int limit = blocks * options.inner_iterations;
    log::Progress progress("sinkhorn", limit, "it");
    std::string progress_detail;
    double progress_eta = log::Progress::eta_unknown;
    sim::Replay replay;  // a sampled simulated run only (core/simulation.hpp)
    std::optional<Impl> before_recorded;
    for (int it = 0; it < limit; ++it) {
      progress.update(it, progress_detail, progress_eta);
      switch (replay.begin(it)) {
        case sim::Replay::Step::record: sim::Replay::uncharged([&] { before_recorded.emplace(*this); }); break;
        case sim::Replay::Step::replay: sim::Replay::uncharged([&] { restore_state(*before_recorded); }); break;
        case sim::Replay::Step::real: break;
      }
      const double eps = eps_at(it);
      bool joint_made = false;
      if (symmetric) {
        if (eps_of_row != eps || eps_of_col != eps) {
          both_lse(eps, row_lse, col_lse);
          eps_of_row = eps_of_col = eps;
        }
        update(f, log_a, row_lse, eps, options.tau_a, true);
        update(g, log_b, col_lse, eps, options.tau_b, true);
      } else {
        if (eps_of_col != eps) col_lse = columns_lse(eps);
        update(g, log_b, col_lse, eps, options.tau_b, false);
        // The next column update runs at the target ε after a block, else at ε_{t+1}.
        const double next_eps = (it + 1) % options.inner_iterations == 0 ? target : eps_at(it + 1);
        if (next_eps == eps && joint_ready(eps)) {
          joint_made = joint_step(eps);
        } else {
          row_lse = rows_lse(eps);
          update(f, log_a, row_lse, eps, options.tau_a, false);
        }
      }
      eps_of_col = eps_of_row = -1;  // both potentials moved
      if (!symmetric) eps_of_row = eps;  // row_lse belongs to the g that f was just updated with
      if (joint_made) eps_of_col = eps;  // col_lse belongs to the f just made
      report.iterations = it + 1;
      if ((it + 1) % options.inner_iterations != 0) continue;
      // The error needs the log-sum-exps of the current (f, g) at the target ε:
      // those of the next update when it runs at the same ε.
      if (symmetric) {
        both_lse(target, row_lse, col_lse);
        eps_of_row = eps_of_col = target;
      } else {
        if (eps_of_col != target) col_lse = columns_lse(target);
        eps_of_col = target;
        if (both_sides && eps_of_row != target) {
          row_lse = rows_lse(target);
          eps_of_row = -1;  // computed for the error only: the next update recomputes
        }
      }
      const double err = error(both_sides);
      if (!report.errors.empty()) {
        const double more = log::iterations_to_threshold(report.errors.back(), err, options.inner_iterations,
                                                         options.threshold);
        progress_eta = more < 0 ? log::Progress::eta_unknown : std::min<double>(more, limit - it - 1) * timer.seconds() / (it + 1);
      }
      report.errors.push_back(err);
      progress_detail = "error " + log::scientific_text(err);
      if (log::verbose())
        log::info("sinkhorn: iteration " + std::to_string(it + 1) + ", error " + log::number_text(err));
      if (!std::isfinite(err)) {
        report.status = SolveStatus::numerical_error;
        break;
      }
      if (err < options.threshold) {
        report.status = SolveStatus::optimal;
        report.converged = true;
        break;
      }
    }
    // The potentials must be finite wherever the weight is positive.
    bool finite = true;
    for (std::size_t i = 0; i < f.size(); ++i)
      if (a[i] > 0 && !std::isfinite(f[i])) finite = false;
    for (std::size_t j = 0; j < g.size(); ++j)
      if (b[j] > 0 && !std::isfinite(g[j])) finite = false;
    if (!comm->all(finite)) {
      report.status = SolveStatus::numerical_error;
      report.converged = false;
    }
    report.scaling_domain = sc.used && !sc.failed;
    report.scaling_fallback = sc.failed;
    report.kernel_builds = sc.builds - builds_before;
    report.rows_absorbed = sc.absorbed - absorbed_before;
    report.columns_absorbed = sc.columns_absorbed - columns_before;
    report.tile_sweeps = sweeps - sweeps_before;
    report.shift_retries = retries - retries_before;
    report.joint_passes = joint.passes - joint_before;
    report.strip_bytes = joint.allowed ? joint.strip_bytes : 0;
    report.seconds = timer.seconds();
    return report;
  }

  double resolve_epsilon() {
    if (epsilon > 0) return epsilon;
    epsilon = options.epsilon;
    if (options.relative_epsilon) {
      ProfilingRegion region("kotml::ot::tiled_mean_cost");
      launch_rows(1.0, true);
      const auto sums = local_rows_of(lse_row);
      dist::ExactSum total(1);
      for (double v : sums) total.add(0, v);
      const double mean = total.allreduce(*comm)[0] / (static_cast<double>(rows.total) * static_cast<double>(m));
      if (!(std::isfinite(mean) && mean > 0))
        throw Error("", "epsilon", "a relative epsilon needs a positive mean cost, got " + log::number_text(mean));
      epsilon = options.epsilon * mean;
    }
    // Potentials are of the size of the costs; their rounding error, divided by
    // ε, must stay far below 1 or the plan is noise. Refuse what T cannot resolve.
    const double resolution = std::is_same<T, float>::value ? 0x1p-17 : 0x1p-40;
    if (epsilon < cost_bound * resolution)
      throw Error::option("epsilon", "the absolute epsilon " + log::number_text(epsilon) + " is below what " +
                                         (std::is_same<T, float>::value ? "float" : "double") +
                                         " precision resolves for costs up to " + log::number_text(cost_bound) +
                                         ": it must be at least " + log::number_text(cost_bound * resolution));
    return epsilon;
  }
};

// --------------------------------------------------------------- set-up

template <class T>
TiledSinkhorn<T>::TiledSinkhorn(const dist::Comm& comm, const RowBlock& rows, const TiledPoints<T>& x,
                                const TiledPoints<T>& y, const PointCost& cost, const TiledSinkhornOptions& options)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.comm = &comm;
  s.rows = rows;
  s.cost = cost;
  s.options = options;
  s.m = static_cast<std::int64_t>(y.points.extent(0));
  const std::int64_t n_local = rows.count;
  const int dim = static_cast<int>(y.points.extent(1));

  comm.phase([&] {
    options.validate();
    cost.validate();
    if (rows.count > 0 && rows.begin % RowBlock::tile_rows != 0)
      throw std::logic_error("tiled Sinkhorn: row block begins at " + std::to_string(rows.begin) +
                             ", not at a row tile");
    if (rows.total < 1) throw Error("", "x", "the source point set is empty");
    if (s.m < 1) throw Error("", "y", "the target point set is empty");
    if (dim < 1) throw Error("", "y", "the points have no coordinates");
    if (static_cast<std::int64_t>(x.points.extent(0)) != n_local)
      throw std::logic_error("tiled Sinkhorn: x has " + std::to_string(x.points.extent(0)) + " rows, the block " +
                             std::to_string(n_local));
    if (n_local > 0 && static_cast<int>(x.points.extent(1)) != dim)
      throw Error("", "x", "has " + std::to_string(x.points.extent(1)) + " dimensions but y has " +
                               std::to_string(dim));
    if (static_cast<std::int64_t>(x.weights.extent(0)) != n_local || static_cast<std::int64_t>(y.weights.extent(0)) != s.m)
      throw Error("", "weights", "need one weight per point on each side");
    if (count_non_finite(x.points) > 0)
      throw Error("", "x", "has a non-finite coordinate (NaN or Inf)");
    if (count_non_finite(y.points) > 0) throw Error("", "y", "has a non-finite coordinate (NaN or Inf)");
    if (cost.label.active()) {
      if (static_cast<std::int64_t>(x.labels.extent(0)) != n_local ||
          static_cast<std::int64_t>(y.labels.extent(0)) != s.m)
        throw Error("", "labels", "a label cost needs one label per point on each side");
      for (const auto& [labels, bound, side] :
           {std::make_tuple(detail::to_host(x.labels), cost.label.row_labels, "x"),
            std::make_tuple(detail::to_host(y.labels), cost.label.col_labels, "y")})
        for (std::size_t i = 0; i < labels.size(); ++i)
          if (labels[i] < 0 || labels[i] >= bound)
            throw Error("", std::string("labels of ") + side,
                        "label " + std::to_string(labels[i]) + " of point " + std::to_string(i) +
                            " is outside the label table");
    }
  });

  s.a = detail::to_host(x.weights);
  s.b = detail::to_host(y.weights);
  comm.phase([&] {
    auto check = [](const std::vector<double>& w, const char* side) {
      for (std::size_t i = 0; i < w.size(); ++i) {
        if (!std::isfinite(w[i])) throw Error("", side, "weight " + std::to_string(i) + " is not finite");
        if (w[i] < 0) throw Error("", side, "weight " + std::to_string(i) + " is negative");
      }
    };
    check(s.a, "a");
    check(s.b, "b");
  });
  double local_mass = 0;
  for (double w : s.a) local_mass += w;
  double mass_b = 0;
  for (double w : s.b) mass_b += w;
  const bool a_positive = comm.any(local_mass > 0);
  comm.phase([&] {
    if (!a_positive) throw Error("", "a", "the source weights sum to zero");
    if (!(mass_b > 0)) throw Error("", "b", "the target weights sum to zero");
  });

  for (auto* side : {&s.a, &s.b}) {
    auto& logs = side == &s.a ? s.log_a : s.log_b;
    logs.resize(side->size());
    for (std::size_t i = 0; i < side->size(); ++i) logs[i] = std::log((*side)[i]);
  }
  // OTT's initialiser: zero potentials, −∞ where the weight is 0.
  s.f.assign(s.a.size(), 0.0);
  s.g.assign(s.b.size(), 0.0);
  for (std::size_t i = 0; i < s.a.size(); ++i)
    if (!(s.a[i] > 0)) s.f[i] = -std::numeric_limits<double>::infinity();
  for (std::size_t j = 0; j < s.b.size(); ++j)
    if (!(s.b[j] > 0)) s.g[j] = -std::numeric_limits<double>::infinity();

  // The cost accessor.
  auto& d = s.data;
  d.kind = cost.kind;
  d.dim = dim;
  d.rows = n_local;
  d.cols = s.m;
  d.row_tiles = (n_local + RowBlock::tile_rows - 1) / RowBlock::tile_rows;
  d.col_tiles = (s.m + detail::tile_cols - 1) / detail::tile_cols;
  d.feature_weight = static_cast<T>(cost.feature_weight);
  d.x = n_local > 0 ? x.points : Matrix<const T>(Matrix<T>("kotml::ot::tiled_no_rows", 0, dim));
  if (!x.points.span_is_contiguous() && n_local > 0)
    throw std::logic_error("tiled Sinkhorn: x must be contiguous");
  {
    // Every rank of the solve holds the same y: foldable when they are every
    // process of the run (the world's solve of `kotml ot` or `kotml map`, one
    // at a time, never the per-pair engines on one rank).
    auto packed = detail::packed_columns_memory<T>("kotml::ot::tiled_y_packed", d.col_tiles, dim,
                                                   comm.size() > 1 && comm.spans_world());
    detail::pack_columns<T>(y.points, packed.view);
    d.y_packed = packed.view;
    s.y_packed_memory = packed.memory;
  }
  if (cost.kind != Cost::euclidean) {
    d.x_norm = detail::point_norms<T>(d.x, cost.kind, s.padded_rows(), "kotml::ot::tiled_x_norms");
    d.y_norm = detail::point_norms<T>(y.points, cost.kind, s.padded_cols(), "kotml::ot::tiled_y_norms");
  }
  if (cost.label.active()) {
    std::vector<T> table(cost.label.table.begin(), cost.label.table.end());
    Vector<T> device(no_init("kotml::ot::tiled_label_table"), table.size());
    detail::copy_to(device, table);
    d.label_table = device;
    d.label_weight = static_cast<T>(cost.label.weight);
    d.col_labels = cost.label.col_labels;
    d.x_label = x.labels;
    // Padded columns need a valid label for the vectorised table lookups.
    Kokkos::View<std::int32_t*, MemSpace> y_labels("kotml::ot::tiled_y_labels", s.padded_cols());
    Kokkos::deep_copy(Kokkos::subview(y_labels, std::make_pair(std::int64_t(0), s.m)), y.labels);
    d.y_label = y_labels;
  }

  s.u = Vector<T>(no_init("kotml::ot::tiled_u"), s.padded_rows());
  s.h = Vector<T>(no_init("kotml::ot::tiled_h"), s.padded_cols());
  s.lse_row = Vector<double>(no_init("kotml::ot::tiled_row_lse"), std::max<std::int64_t>(n_local, 1));
  s.row_guess = Vector<double>(no_init("kotml::ot::tiled_row_guess"), std::max<std::int64_t>(n_local, 1));
  s.redone = Kokkos::View<std::int32_t*, MemSpace>("kotml::ot::tiled_rows_redone", std::max<std::int64_t>(d.row_tiles, 1));
  s.shift = Vector<T>("kotml::ot::tiled_shift", s.padded_cols());
  s.top = Vector<T>(no_init("kotml::ot::tiled_column_max"), s.padded_cols());
  s.limbs = detail::Limbs(no_init("kotml::ot::tiled_column_limbs"), s.padded_cols() * detail::column_limbs);

  // A bound of the costs for the check of ε: ‖x‖ + ‖y‖ bounds the distances.
  {
    const double nx = std::sqrt(comm.max(detail::largest_squared_norm(d.x)));
    const double ny = std::sqrt(detail::largest_squared_norm(y.points));
    double feature = cost.kind == Cost::cosine ? 2.0 : nx + ny;
    if (cost.kind == Cost::sqeuclidean) feature *= feature;
    double label = 0;
    for (double v : cost.label.table) label = std::max(label, std::fabs(v));
    s.cost_bound = cost.feature_weight * feature + (cost.label.active() ? cost.label.weight * label : 0.0);
  }

  // Storage by memory budget, agreed over ranks.
  const std::size_t local_bytes =
      static_cast<std::size_t>(d.row_tiles * d.col_tiles) * detail::tile_entries * sizeof(T);
  const std::size_t local_budget = options.cost_memory > 0 ? options.cost_memory : default_cost_memory(comm);
  s.budget = local_budget;
  const bool fits = comm.all(local_bytes <= s.budget);
  s.stored_bytes = static_cast<std::size_t>(comm.max(static_cast<std::int64_t>(local_bytes)));
  s.budget = static_cast<std::size_t>(-comm.max(-static_cast<std::int64_t>(s.budget)));
  const bool store = options.storage == CostStorage::stored || (options.storage == CostStorage::automatic && fits);
  s.storing = store;
  // The scaling domain keeps K̃ beside the costs: twice the stored bytes.
  const bool kernel_fits = comm.all(2 * local_bytes <= local_budget);
  comm.phase([&] {
    if (options.domain == SinkhornDomain::scaling && !store)
      throw Error::option("sinkhorn-domain", "the scaling domain needs stored costs, and they do not fit --cost-memory");
  });
  s.sc.allowed = store && options.updates == DualUpdates::alternating &&
                 (options.domain == SinkhornDomain::scaling ||
                  (options.domain == SinkhornDomain::automatic && kernel_fits));
  if (s.sc.allowed) {
    s.sc.f_bar_d = Vector<T>(no_init("kotml::ot::tiled_scaling_f_bar"), s.padded_rows());
    s.sc.g_bar_d = Vector<T>(no_init("kotml::ot::tiled_scaling_g_bar"), s.padded_cols());
    s.sc.alpha = Vector<T>(no_init("kotml::ot::tiled_scaling_alpha"), s.padded_rows());
    s.sc.beta = Vector<T>(no_init("kotml::ot::tiled_scaling_beta"), s.padded_cols());
    s.sc.scale = Vector<double>(no_init("kotml::ot::tiled_scaling_scale"), s.padded_cols());
    s.sc.low = Vector<double>(no_init("kotml::ot::tiled_scaling_low"), std::max<std::int64_t>(n_local, 1));
    s.sc.span = Vector<double>(no_init("kotml::ot::tiled_scaling_span"), std::max<std::int64_t>(n_local, 1));
    s.sc.selected = Kokkos::View<std::int32_t*, MemSpace>(no_init("kotml::ot::tiled_scaling_rows"),
                                                          std::max<std::int64_t>(n_local, 1));

  }
  s.plan_joint_pass(local_budget);
  if (store) {
    ProfilingRegion region("kotml::ot::tiled_store_costs");
    comm.phase([&] {  // every rank, also one without rows: the phase is collective
      if (local_bytes == 0) return;
      try {
        s.stored = Vector<T>(no_init("kotml::ot::tiled_stored_costs"), local_bytes / sizeof(T));
      } catch (const std::exception&) {
        throw Error("", "cost-storage", "storing the costs takes " + std::to_string(local_bytes) +
                                            " bytes on this rank, more than can be allocated; use online costs");
      }
    });
    if (local_bytes > 0) {
      detail::FillTiles<T> fill{d, s.stored};
      Kokkos::parallel_for("kotml::ot::tiled_fill",
                           detail::tile_policy(d.row_tiles * d.col_tiles, detail::tile_scratch_bytes<T>(0)), fill);
      Kokkos::fence();
      d.stored = s.stored;
    }
  }
}

template <class T>
TiledSinkhorn<T>::~TiledSinkhorn() = default;

template <class T>
void TiledSinkhorn<T>::set_potentials(const std::vector<double>& f_local, const std::vector<double>& g) {
  Impl& s = *impl_;
  if (f_local.size() != s.f.size() || g.size() != s.g.size())
    throw Error("", "warm start", "the potentials do not match the problem's shape");
  for (std::size_t i = 0; i < f_local.size(); ++i)
    s.f[i] = s.a[i] > 0 ? f_local[i] : -std::numeric_limits<double>::infinity();
  for (std::size_t j = 0; j < g.size(); ++j) s.g[j] = s.b[j] > 0 ? g[j] : -std::numeric_limits<double>::infinity();
  s.eps_of_col = s.eps_of_row = -1;
  s.sc.active = false;  // K̃ is rebuilt around the new potentials
}

template <class T>
TiledSinkhornReport TiledSinkhorn<T>::solve() {
  return impl_->solve();
}

template <class T>
std::vector<double> TiledSinkhorn<T>::f() const {
  return impl_->f;
}

template <class T>
std::vector<double> TiledSinkhorn<T>::g() const {
  return impl_->g;
}

template <class T>
double TiledSinkhorn<T>::epsilon() {
  return impl_->resolve_epsilon();
}

// ------------------------------------------------------------------ plans

template <class T>
std::vector<double> TiledSinkhorn<T>::transpose_apply(const std::vector<double>& u,
                                                      const std::vector<std::int32_t>& groups, std::int32_t n_groups) {
  std::vector<double> out(static_cast<std::size_t>(std::max<std::int32_t>(n_groups, 0) * impl_->m));
  transpose_apply(u, groups, n_groups, out.data());
  return out;
}

template <class T>
void TiledSinkhorn<T>::transpose_apply(const std::vector<double>& u, const std::vector<std::int32_t>& groups,
                                       std::int32_t n_groups, double* out) {
  Impl& s = *impl_;
  ProfilingRegion region("kotml::ot::tiled_transpose_apply");
  if (u.size() != s.f.size() || groups.size() != s.f.size() || n_groups < 1)
    throw std::logic_error("tiled Sinkhorn: transpose_apply needs one weight and group per local row");
  const double eps = s.resolve_epsilon();
  s.scale_rows(s.f, eps);
  s.scale_cols(s.g, eps);
  Vector<double> weight(no_init("kotml::ot::tiled_apply_weight"), std::max<std::size_t>(u.size(), 1));
  Kokkos::View<std::int32_t*, MemSpace> group(no_init("kotml::ot::tiled_apply_group"),
                                              std::max<std::size_t>(groups.size(), 1));
  if (!u.empty()) {
    detail::copy_to(weight, u);
    detail::copy_to(group, groups);
  }
  // Each column's sum is its own, so chunks of columns give the bits of one
  // sweep; the limbs (groups × columns × 4) stay bounded for many groups and
  // columns (30 clusters × 10^6 columns would be 960 MB, twice with the reduction).
  const std::int64_t chunk = s.column_chunk_tiles(n_groups * detail::tile_cols * detail::column_limbs);
  bool held = true;
  for (std::int64_t first = 0; first < s.data.col_tiles; first += chunk) {
    const std::int64_t tiles = std::min(chunk, s.data.col_tiles - first);
    const std::int64_t chunk_cols = tiles * detail::tile_cols, col0 = first * detail::tile_cols;
    detail::Limbs limbs("kotml::ot::tiled_apply_limbs", n_groups * chunk_cols * detail::column_limbs);
    detail::GroupedColumnSweep<T> sweep{s.data, s.u,  s.h,        static_cast<T>(1.0 / eps), weight, group,
                                        n_groups, first, chunk_cols, limbs};
    Kokkos::parallel_for("kotml::ot::tiled_transpose_apply",
                         detail::tile_policy(tiles, sweep.scratch_bytes(n_groups)), sweep);
    Kokkos::fence();
    const auto totals = s.reduce_columns(limbs, n_groups * chunk_cols);
    for (std::int32_t q = 0; q < n_groups; ++q)
      for (std::int64_t j = col0; j < std::min(s.m, col0 + chunk_cols); ++j) {
        const double v = totals[static_cast<std::size_t>(q * chunk_cols + j - col0)];
        if (!(std::fabs(v) < 0x1p40)) held = false;
        out[static_cast<std::size_t>(q * s.m + j)] = v;
      }
  }
  if (!held)
    throw Error("", "plan", "a column sum of the plan is too large to be held exactly (weights above 2^32?)");
}

template <class T>
std::vector<double> TiledSinkhorn<T>::apply(const std::vector<double>& v, const std::vector<std::int32_t>& groups,
                                            std::int32_t n_groups) {
  Impl& s = *impl_;
  ProfilingRegion region("kotml::ot::tiled_apply");
  if (v.size() != s.g.size() || groups.size() != s.g.size() || n_groups < 1)
    throw std::logic_error("tiled Sinkhorn: apply needs one weight and group per column");
  const double eps = s.resolve_epsilon();
  s.scale_rows(s.f, eps);
  s.scale_cols(s.g, eps);
  Vector<double> weight(no_init("kotml::ot::tiled_apply_weight"), v.size());
  Kokkos::View<std::int32_t*, MemSpace> group(no_init("kotml::ot::tiled_apply_group"), groups.size());
  detail::copy_to(weight, v);
  detail::copy_to(group, groups);
  Matrix<double> out("kotml::ot::tiled_apply_out", std::max<std::int64_t>(s.rows.count, 1), n_groups);
  detail::GroupedRowSweep<T> sweep{s.data, s.u, s.h, static_cast<T>(1.0 / eps), weight, group, n_groups, out};
  Kokkos::parallel_for("kotml::ot::tiled_apply", detail::tile_policy(s.data.row_tiles, sweep.scratch_bytes()), sweep);
  Kokkos::fence();
  auto host = Kokkos::create_mirror_view_and_copy(HostSpace(), out);
  return std::vector<double>(host.data(), host.data() + s.rows.count * n_groups);
}

template <class T>
PlanBlockSums TiledSinkhorn<T>::block_sums(const std::vector<std::int32_t>& row_groups, std::int32_t n_row_groups,
                                           const std::vector<std::int32_t>& col_groups, std::int32_t n_col_groups) {
  Impl& s = *impl_;
  ProfilingRegion region("kotml::ot::tiled_block_sums");
  if (row_groups.size() != s.f.size() || col_groups.size() != s.g.size() || n_row_groups < 1 || n_col_groups < 1)
    throw std::logic_error("tiled Sinkhorn: block_sums needs one group per local row and per column");
  const double eps = s.resolve_epsilon();
  s.scale_rows(s.f, eps);
  s.scale_cols(s.g, eps);
  Kokkos::View<std::int32_t*, MemSpace> rg(no_init("kotml::ot::tiled_block_rows"), std::max<std::size_t>(row_groups.size(), 1));
  Kokkos::View<std::int32_t*, MemSpace> cg(no_init("kotml::ot::tiled_block_cols"), col_groups.size());
  if (!row_groups.empty()) detail::copy_to(rg, row_groups);
  detail::copy_to(cg, col_groups);
  const std::int64_t blocks = static_cast<std::int64_t>(n_row_groups) * n_col_groups;
  detail::Limbs limbs("kotml::ot::tiled_block_limbs", blocks * 3 * detail::block_limbs);
  Kokkos::View<std::int64_t*, MemSpace> count("kotml::ot::tiled_block_count", blocks);
  detail::BlockSweep<T> sweep{s.data, s.u, s.h, static_cast<T>(1.0 / eps), rg, cg, n_row_groups, n_col_groups,
                              limbs, count};
  Kokkos::parallel_for("kotml::ot::tiled_block_sums",
                       detail::tile_policy(s.data.row_tiles, sweep.scratch_bytes(blocks)), sweep);
  Kokkos::fence();
  const auto sums = s.template reduce_limbs<detail::BlockFixed>(limbs, blocks * 3);
  auto host_count = Kokkos::create_mirror_view_and_copy(HostSpace(), count);
  if (s.comm->size() > 1) s.comm->sum_in_place(host_count.data(), static_cast<std::size_t>(blocks));
  PlanBlockSums out;
  out.row_groups = n_row_groups;
  out.col_groups = n_col_groups;
  for (std::int64_t b = 0; b < blocks; ++b) {
    out.mass.push_back(sums[static_cast<std::size_t>(3 * b)]);
    out.cost.push_back(sums[static_cast<std::size_t>(3 * b + 1)]);
    out.plain_cost.push_back(sums[static_cast<std::size_t>(3 * b + 2)]);
    out.count.push_back(host_count(b));
  }
  return out;
}

template <class T>
TiledPointGradients TiledSinkhorn<T>::point_gradients() {
  Impl& s = *impl_;
  ProfilingRegion region("kotml::ot::tiled_point_gradients");
  if (s.cost.kind == Cost::cosine || s.cost.label.active())
    throw Error::option("cost", "gradients with respect to the points are available for the euclidean and "
                                "sqeuclidean feature costs without a label term");
  const double eps = s.resolve_epsilon();
  s.scale_rows(s.f, eps);
  s.scale_cols(s.g, eps);
  const bool squared = s.cost.kind == Cost::sqeuclidean;
  const double lambda = s.cost.feature_weight;
  const double scale = squared ? 2 * lambda : lambda * lambda;
  const T inv_eps = static_cast<T>(1.0 / eps);
  return {s.row_gradients(inv_eps, scale, squared), s.column_gradients(inv_eps, scale, squared)};
}

template class TiledSinkhorn<float>;
template class TiledSinkhorn<double>;

}  // namespace kotml::ot
