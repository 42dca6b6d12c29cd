#pragma once
// Sampled computation and folded buffers, for simulated clusters only.
//
// The `smpi` build (cmake/KotmlSmpi.cmake) runs every simulated rank's real
// code in one process on this machine. A problem that is minutes per rank on a
// cluster is then hours of this machine, and a buffer that every rank holds
// alike (the reference's features, y's packed copy) is P copies in one
// address space. SimGrid's SMPI has two remedies, used here and nowhere else:
//  * sampling: an iterative solve runs its first N iterations for real,
//    records the next one (each compute block in it timed, its outputs kept;
//    KOTML_SMPI_RECORDED=R records R from the same state and charges each
//    block the mean of its R runs), and replays the rest: before each
//    replayed iteration the solver restores
//    its state as it was before the recorded one, and each compute block is
//    skipped, its recorded outputs put back and its recorded time charged to
//    the simulated clock (SMPI_SAMPLE_LOCAL). A replay is thus the recorded
//    iteration again, bit for bit: the same choices, the same collectives;
//    Loops over items of like cost (the sources of Dijkstra rows) are
//    sampled item by item instead: a rank runs its first item at a site (cold
//    caches and first touches included, once), times the next N, and is
//    charged their mean for every item after, which it skips;
//  * folding: every rank's n-th allocation at one site maps the same memory
//    (SMPI_SHARED_MALLOC, smpi/shared-malloc:local), so two buffers of one
//    site (one for each of two clouds, say) stay apart.
// Sampling keeps what a rank's clock reads and the run's communication, not
// its answer: the iterates stop moving after the recorded iteration (a study
// fixes the iteration count: no error falls below a threshold), and skipped
// items write nothing. Folded are buffers that hold the same values on every
// process, each rank writing them itself (SMPI copies no message into folded
// memory), so that folding changes no value; and, in a sampled run only,
// buffers that hold nothing but the answer (rows of an output matrix), which
// such a run does not compute anyway. Both are off unless the environment asks for them
// (perf/scaling/smpi_run.sh --samples N --fold), and neither exists in any
// other build, where compute() calls the body, a Replay has only real
// iterations and folded() allocates.
//
// A compute block must not call MPI (SMPI cannot time a block across a call),
// and must write its outputs whole each time it runs: zeroing an accumulator
// belongs inside the block, or a skipped block would leave it zero.

#include "kotml/core/types.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kotml::sim {

#ifdef KOTML_SMPI
/// KOTML_SMPI_SAMPLES (0 or unset: no sampling).
int sample_runs();
/// KOTML_SMPI_FOLD=1.
bool folding();
/// Whether a replaying solve's compute blocks are sampled now.
bool sampling_blocks();
struct Bytes {
  void* data;
  std::size_t size;
};
void sampled_block(const char* site, const std::function<void()>& body, std::vector<Bytes> outputs);
void sampled_items(const char* site, std::int64_t count, const std::function<void(std::int64_t)>& item);
void charge_nothing_for(const std::function<void()>& body);
void* folded_allocation(std::size_t bytes, const char* site);
/// Frees a folded_allocation of `bytes` (as asked for).
void release_folded(void* memory, std::size_t bytes);
#else
/// Outside a simulated run nothing is folded.
inline bool folding() { return false; }
#endif

/// Runs `body`; in the recorded and replayed iterations of a sampled
/// simulated run, the recorded iteration's run of the block, timed and its
/// `outputs` (Views, contiguous) kept, stands for each replay's. `site` names
/// the block; its place in the iteration tells the replays' blocks apart, and
/// a replay meets them in the recorded order. Outputs are what the block writes
/// that the solver reads again; what only other blocks read (tiles of costs,
/// K̃) need not be listed.
template <class Body, class... Outputs>
void compute(const char* site, Body&& body, const Outputs&... outputs) {
#ifdef KOTML_SMPI
  if (sampling_blocks()) {
    sampled_block(site, std::function<void()>(std::forward<Body>(body)),
                  {Bytes{static_cast<void*>(outputs.data()), outputs.span() * sizeof(*outputs.data())}...});
    return;
  }
#else
  (void)site;
  ((void)outputs, ...);
#endif
  body();
}

/// Runs body(first, last) over items [0, count) whose costs are alike, as one
/// call body(0, count). In a sampled simulated run a rank runs them one at a
/// time: its first item at this `site` (over all its calls) and the N after it,
/// which are timed; every later item is charged their mean and does not run,
/// and what it would write stays as it was. body must not call MPI.
template <class Body>
void like_items(const char* site, std::int64_t count, Body&& body) {
#ifdef KOTML_SMPI
  if (sample_runs() > 0) {
    sampled_items(site, count, [&body](std::int64_t item) { body(item, item + 1); });
    return;
  }
#else
  (void)site;
#endif
  body(std::int64_t(0), count);
}

/// The iterations of one iterative solve in a sampled simulated run (header
/// comment); outside one, every iteration is real. One at a time per rank.
class Replay {
 public:
  enum class Step {
    real,    // run as it is
    record,  // save the state first; its compute blocks are timed
    replay   // restore the saved state first; its blocks are charged
  };
  Replay();
  ~Replay();
  Replay(const Replay&) = delete;
  Replay& operator=(const Replay&) = delete;
  /// At the start of iteration `iteration` (0, 1, ...): what to do with it.
  Step begin(int iteration);
  /// Runs `body` (the save or the restore) without charging its time to the
  /// simulated clock: the copies are the simulation's, not the solver's.
  template <class Body>
  static void uncharged(Body&& body) {
#ifdef KOTML_SMPI
    charge_nothing_for(std::function<void()>(std::forward<Body>(body)));
#else
    body();
#endif
  }

 private:
  [[maybe_unused]] bool active_ = false;  // this solve owns the rank's replay
};

#ifndef KOTML_SMPI
inline Replay::Replay() = default;
inline Replay::~Replay() = default;
inline Replay::Step Replay::begin(int) { return Step::real; }
#endif

/// A View of n Ts and what keeps its memory: a plain allocation (not zeroed),
/// or, in a simulated run with folding on, the memory that every rank's
/// allocation at `site` shares (then `memory` is set): the rank's n-th there
/// shares with the others' n-th, so every rank must ask at each site in the
/// same order. Keep `memory` as long
/// as `view`. For values that are the same on every process of the run
/// (`same_everywhere`; otherwise a plain allocation), written by each rank
/// itself: an MPI receive into folded memory is not copied.
template <class T, class Space = MemSpace>
struct Folded {
  Vector<T, Space> view;
  std::shared_ptr<void> memory;
};

template <class T, class Space = MemSpace>
Folded<T, Space> folded(const char* site, std::size_t n, bool same_everywhere) {
#ifdef KOTML_SMPI
  if (same_everywhere && folding() && std::is_same<Space, HostSpace>::value) {
    const std::size_t bytes = n * sizeof(T);
    void* raw = folded_allocation(bytes, site);
    return {Vector<T, Space>(static_cast<T*>(raw), n),
            std::shared_ptr<void>(raw, [bytes](void* memory) { release_folded(memory, bytes); })};
  }
#else
  (void)same_everywhere;
#endif
  return {Vector<T, Space>(no_init(site), n), nullptr};
}

/// Before a gather into `all`: when it is folded, SMPI copies no message into
/// it, so each rank writes its own block (`count` values at `offset`) itself,
/// and the gather's return means every rank has. Nothing otherwise.
template <class T, class Space>
void write_own_block(const Folded<T, Space>& all, const T* mine, std::size_t count, std::size_t offset) {
  if (all.memory) std::copy(mine, mine + count, all.view.data() + offset);
}

/// Memory for values that are only the command's answer (a chunk of output
/// rows): folded when the run samples and folds, since a sampled run's answer
/// is not kept; a plain allocation otherwise.
template <class T, class Space = MemSpace>
Folded<T, Space> answer_buffer(const char* site, std::size_t n) {
#ifdef KOTML_SMPI
  return folded<T, Space>(site, n, sample_runs() > 0);
#else
  return folded<T, Space>(site, n, false);
#endif
}

/// Scratch memory of compute blocks (a joint pass's row strips and their
/// per-slot column limbs): each run of a block writes it before reading it,
/// and nothing outside the block reads it. Folded when the run folds and every
/// rank asks for the same n (`same_size`; SMPI maps the first allocation's
/// size at a site): simulated ranks take turns only at MPI calls and at the
/// edges of sampled blocks, and a block calls no MPI, so one rank's run of it
/// is done with the memory before another rank's starts. A plain allocation
/// otherwise.
template <class T, class Space = MemSpace>
Folded<T, Space> block_scratch(const char* site, std::size_t n, bool same_size) {
  return folded<T, Space>(site, n, same_size);
}

/// `view` itself, or, in a simulated run with folding on, a copy in the memory
/// every rank's copy at `site` shares, its memory added to `keep` (which must
/// outlive the copy). For a contiguous View that holds the same values on
/// every process (`same_everywhere`), made between two MPI calls: the rank's
/// own allocation is then freed before the others make theirs.
template <class View>
View shared_copy(const char* site, const View& view, bool same_everywhere,
                 std::vector<std::shared_ptr<void>>& keep) {
  using T = typename View::non_const_value_type;
  auto copy = folded<T, typename View::memory_space>(site, view.span(), same_everywhere);
  if (!copy.memory) return view;
  View shared(copy.view.data(), view.layout());
  Kokkos::deep_copy(shared, view);
  keep.push_back(copy.memory);
  return shared;
}

}  // namespace kotml::sim
