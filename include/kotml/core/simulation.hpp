#pragma once
// Sampled computation and folded buffers, for simulated clusters only.
//
// The `smpi` build (cmake/KotmlSmpi.cmake) runs every simulated rank's real
// code in one process on this machine. A problem that is minutes per rank on a
// cluster is then hours of this machine, and a buffer that every rank holds
// alike (the reference's features, y's packed copy) is P copies in one
// address space. SimGrid's SMPI has two remedies, used here and nowhere else:
//  * sampling: an iterative solve runs its first N iterations for real,
//    records the next one (each compute block in it timed, its outputs kept),
//    and replays the rest: before each replayed iteration the solver restores
//    its state as it was before the recorded one, and each compute block is
//    skipped, its recorded outputs put back and its recorded time charged to
//    the simulated clock (SMPI_SAMPLE_LOCAL). A replay is thus the recorded
//    iteration again, bit for bit: the same choices, the same collectives;
//  * folding: every rank's allocation at one site maps the same memory
//    (SMPI_SHARED_MALLOC, smpi/shared-malloc:local).
// Sampling keeps what a rank's clock reads and the run's communication, not
// its answer: the iterates stop moving after the recorded iteration (a study
// fixes the iteration count: no error falls below a threshold). Only buffers
// that hold the same values on every process are folded, each rank writing
// them itself (SMPI copies no message into folded memory), so folding changes
// no value. Both are off unless the environment asks for them
// (perf/scaling/smpi_run.sh --samples N --fold), and neither exists in any
// other build, where compute() calls the body, a Replay has only real
// iterations and folded() allocates.
//
// A compute block must not call MPI (SMPI cannot time a block across a call),
// and must write its outputs whole each time it runs: zeroing an accumulator
// belongs inside the block, or a skipped block would leave it zero.

#include "kotml/core/types.hpp"

#include <cstddef>
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
void charge_nothing_for(const std::function<void()>& body);
void* folded_allocation(std::size_t bytes, const char* site);
void release_folded(void* memory);
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
/// allocation at `site` shares (then `memory` is set). Keep `memory` as long
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
    void* raw = folded_allocation(n * sizeof(T), site);
    return {Vector<T, Space>(static_cast<T*>(raw), n), std::shared_ptr<void>(raw, release_folded)};
  }
#else
  (void)same_everywhere;
#endif
  return {Vector<T, Space>(no_init(site), n), nullptr};
}

}  // namespace kotml::sim
