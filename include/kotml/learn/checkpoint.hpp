#pragma once
// Training checkpoints in HDF5, written atomically (temporary file, then
// rename), so that a run killed at any moment leaves the previous checkpoint
// intact. A checkpoint after epoch e holds all the state the next epoch reads:
// A, the Adam moments and step count, the random streams' position (seed and
// the index of the next epoch's batch stream; every stream is keyed by
// (seed, purpose, index) and starts at position 0), the training history, and
// the EMD warm-start basis of every pair solved so far. Restarting from it ends
// bit-identical to an uninterrupted run. The configuration fingerprint guards
// against continuing with other options or another cohort.
//
// Layout: /A (k×d), /adam/{m,v} (k×d), /adam/step, /progress/{epochs_done,
// converged}, /rng/{seed,purposes,next_index,position}, /history/<field>,
// /warm/{first,second,offset,basis,potentials}; root attributes fingerprint, kotml_version,
// git_hash.

#include <cstdint>
#include <string>
#include <vector>

#include "kotml/learn/metric.hpp"
#include "kotml/learn/trainer.hpp"

namespace kotml::learn {

/// Warm-start state per donor pair: EMD bases (int32 per node) or Sinkhorn
/// potentials (f then g, stored as double); a run uses one kind.
struct WarmBases {
  std::vector<std::int64_t> first;    // cohort donor index (source)
  std::vector<std::int64_t> second;   // cohort donor index (target)
  std::vector<std::int64_t> offset;   // pair p's state is [offset[p], offset[p+1]) of basis or potentials
  std::vector<std::int32_t> basis;
  std::vector<double> potentials;
};

struct Checkpoint {
  std::string fingerprint;
  std::int64_t epochs_done = 0;
  bool converged = false;
  std::uint64_t seed = 0;
  MetricMatrix a;
  std::int64_t adam_steps = 0;
  std::vector<double> adam_m, adam_v;
  std::vector<EpochRecord> history;
  WarmBases warm;
};

/// Writes atomically; Error naming the file when it cannot be written.
void write_checkpoint(const std::string& path, const Checkpoint& checkpoint);

/// Reads a checkpoint; Error naming the file and element when it is missing,
/// not a kotml checkpoint, or damaged.
Checkpoint read_checkpoint(const std::string& path);

}  // namespace kotml::learn
