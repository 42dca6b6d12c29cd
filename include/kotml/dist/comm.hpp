#pragma once
// A thin MPI communicator wrapper with the project's two collective rules built in:
//  * failures are agreed on: a phase that fails on any rank throws the same
//    CollectiveError on every rank, so no rank is left waiting in a collective;
//  * sums that feed results are deterministic: partials are gathered and added in
//    global-id order, never left to MPI's reduction order.

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kotml/core/error.hpp"
#include "kotml/core/types.hpp"

namespace kotml::dist {

/// MPI_Init for kotml's programs (the CLI, the tests, the benchmarks, the
/// fuzzers). A process that no launcher started is an MPI world of one (a
/// singleton); Open MPI 4 would start a helper daemon for it and probe every
/// network transport, 0.4 s on this project's 2-core machine for a process
/// that talks to nobody. initialize_mpi sets singleton_settings in the
/// environment for MPI_Init, each unless the user set it already; afterwards
/// it removes every Open MPI and PMIx variable that was not there before, so
/// that no child process (an `mpirun` the tests start) inherits them.
void initialize_mpi(int* argc, char*** argv);

/// The Open MPI parameters (variable, value) that make a singleton start in
/// 0.04 s instead of 0.4: no daemon (ess_singleton_isolated: kotml never
/// spawns or connects to other MPI jobs), and the ob1 point-to-point layer
/// over the loopback transport alone (pml ob1, btl self): a world of one
/// talks only to itself, so no network is probed. `environment` looks a
/// variable up (nullptr when unset). Empty where a launcher's variables are
/// present (mpirun, srun through PMIx or PMI, MPICH's hydra) and where the MPI
/// is not Open MPI 4.
std::vector<std::pair<std::string, std::string>> singleton_settings(
    const std::function<const char*(const char*)>& environment);

/// An Error known to every rank at once (thrown by Comm::agree). The CLI prints
/// it once, from rank 0, and every rank exits with code 2 (a user error) or 3
/// (a bug in kotml).
class CollectiveError : public Error {
 public:
  explicit CollectiveError(const Error& e) : Error(e) {}
};

/// What a phase's body threw, as an Error to agree on: Errors as they are, an
/// exhausted memory as a user-facing Error (the remedy is a smaller problem or
/// more ranks), anything else as a bug.
Error failure_of_current_exception();

/// How Comm::alltoallv moves its values (see there).
enum class ExchangeRoute { automatic, direct, grid };

/// The fan-in, in units of ⌈√P⌉, past which an automatic exchange goes through
/// the grid: about what the grid's busiest rank handles in all (headers and
/// values in the first hop, values in the second).
inline constexpr double grid_messages_bound = 4.0;

class Comm {
 public:
  explicit Comm(MPI_Comm comm = MPI_COMM_WORLD);

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool is_root() const { return rank_ == 0; }
  MPI_Comm raw() const { return comm_; }
  /// Whether every process of the run is in this communicator.
  bool spans_world() const;

  void barrier() const;

  /// Collective. If any rank passes a failure, every rank throws a CollectiveError
  /// carrying the failure of the lowest failing rank; otherwise returns. Timed
  /// as the phase "agree" (kotml/core/phase_timers.hpp), under the caller's.
  void agree(const std::optional<Error>& local_failure) const;

  /// Collective. Runs body on every rank; an exception it throws is held back
  /// until all ranks have finished the body, then agreed on (see
  /// failure_of_current_exception for how it is classified).
  template <class Body>
  void phase(Body&& body) const {
    std::optional<Error> failure;
    try {
      body();
    } catch (const CollectiveError&) {
      throw;  // already agreed on by every rank
    } catch (...) {
      failure = failure_of_current_exception();
    }
    agree(failure);
  }

  // --- broadcasts (from root to all) ---------------------------------------
  void bcast(void* data, std::size_t bytes, int root = 0) const;
  template <class T>
  void bcast_vector(std::vector<T>& values, int root = 0) const {
    std::uint64_t n = values.size();
    bcast(&n, sizeof n, root);
    values.resize(n);
    if (n) bcast(values.data(), n * sizeof(T), root);
  }
  void bcast_string(std::string& text, int root = 0) const;
  void bcast_strings(std::vector<std::string>& texts, int root = 0) const;

  // --- reductions that are exact or order-free ------------------------------
  std::int64_t sum(std::int64_t local) const;
  /// values[0..count) summed element-wise over ranks, in place (integer sums:
  /// exact, the limbs of fixed-point totals).
  void sum_in_place(std::int64_t* values, std::size_t count) const;
  double max(double local) const;
  /// values[0..count) maximised element-wise over ranks, in place (several
  /// maxima, or flags as 0/1, in one collective).
  void max_in_place(double* values, std::size_t count) const;
  double min(double local) const;
  std::int64_t max(std::int64_t local) const;
  bool any(bool local) const;
  bool all(bool local) const;

  // --- gathers (result on every rank, concatenated in rank order) -----------
  std::vector<double> allgatherv(const std::vector<double>& local) const;
  std::vector<std::int64_t> allgatherv(const std::vector<std::int64_t>& local) const;
  /// Into the caller's buffer of all_count values (the sum of the counts, which
  /// the caller knows from its block layout): no allocation per call, for gathers
  /// repeated every iteration.
  void allgatherv(const float* local, std::int64_t count, float* all, std::int64_t all_count) const;
  void allgatherv(const double* local, std::int64_t count, double* all, std::int64_t all_count) const;
  void allgatherv(const std::int32_t* local, std::int64_t count, std::int32_t* all, std::int64_t all_count) const;
  std::vector<std::string> allgather_strings(const std::string& local) const;

  // --- personalised exchange ------------------------------------------------
  /// `send` holds send_counts[r] values for each rank r in rank order; returns
  /// the values every rank sent to this one, in rank order, and their counts in
  /// recv_counts. A share past MPI's int counts throws InternalError on every
  /// rank. Shares of no values are no messages. The route changes only how the
  /// values travel, never where they land:
  ///  * direct: one message from each rank to each rank it has values for;
  ///  * grid: two hops through an ExchangeGrid (kotml/dist/exchange_grid.hpp),
  ///    at most about 3⌈√P⌉ messages per rank for twice the volume (direct
  ///    where a grid message would pass MPI's int counts);
  ///  * automatic: the grid where some rank would otherwise hear from more than
  ///    grid_messages_bound · ⌈√P⌉ ranks, direct otherwise.
  std::vector<std::int64_t> alltoallv(const std::vector<std::int64_t>& send,
                                      const std::vector<std::int64_t>& send_counts,
                                      std::vector<std::int64_t>& recv_counts,
                                      ExchangeRoute route = ExchangeRoute::automatic) const;

  /// Deterministic sum of per-unit partial vectors. Each rank contributes the
  /// partials of the units it owns (ids[u] is unit u's global id, partials holds
  /// `width` values per unit, row after row). Every rank receives the sum over all
  /// units of all ranks, added in increasing global-id order: the result is
  /// bit-identical for any rank count and any assignment of units to ranks.
  std::vector<double> sum_by_id(const std::vector<GlobalId>& ids,
                                const std::vector<double>& partials, std::size_t width) const;

  /// Collects warning lines from all ranks and prints each distinct one once, on
  /// rank 0, in rank order. Collective.
  void gather_warnings(const std::vector<std::string>& local_warnings) const;

 private:
  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace kotml::dist
