// Sampled compute blocks and folded buffers (include/kotml/core/simulation.hpp),
// in the `smpi` build only (cmake/KotmlSmpi.cmake compiles it into kotml).
//
// A Replay marks the rank's solve as sampling; compute() then tags each block
// by its site, the solve and its place in the iteration. like_items loops are
// sampled by their site alone, outside any Replay, and timed here (their first
// item, cold, is not part of the mean). SMPI_SAMPLE_LOCAL_TAG
// keys a block by this file, the tag, the line and the rank: the recorded
// iteration's run of a block is its timed trip, and every later trip with the
// same key (the same block at the same place of a replayed iteration) is
// skipped and charged that time, its kept outputs copied back. With
// KOTML_SMPI_RECORDED=R the first R-1 replays run their blocks for real too
// (SMPI benchmarks R trips of each key) and the rest are charged the mean.
// A block that a replay reaches first (the error check of a block of inner
// iterations, say) runs once for real and is replayed after. The globals are
// per rank: smpirun loads a copy of kotml per rank (smpi/privatization:dlopen).

#include "kotml/core/simulation.hpp"

#include <smpi/smpi.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <unordered_map>
#include <vector>

#ifndef SMPI_HELPERS_H
#error "smpi_sampling.cpp is for the smpi preset: build with smpicxx"
#endif

namespace kotml::sim {
namespace {

/// The environment variable `name` as a count in [1, limit), or `otherwise`
/// when it is unset, empty or not such a count.
int count_from_environment(const char* name, long limit, int otherwise) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return otherwise;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  return end != nullptr && *end == '\0' && value > 0 && value < limit ? static_cast<int>(value) : otherwise;
}

/// KOTML_SMPI_RECORDED (default 1): how many iterations a sampled solve
/// records. Each starts from the state before the first (the solver restores
/// it), so each meets the same blocks in the same order, and SMPI runs every
/// block that many times for real and charges each later trip their mean. One
/// trip carries this machine's noise into every replay; more average it out.
int recorded_trips() {
  static const int trips = count_from_environment("KOTML_SMPI_RECORDED", 1000, 1);
  return trips;
}

bool parse_fold() {
  const char* text = std::getenv("KOTML_SMPI_FOLD");
  return text != nullptr && std::string(text) == "1";
}

struct ReplayState {
  bool on = false;
  Replay::Step step = Replay::Step::real;
  long solve = 0;
  long ordinal = 0;
};
ReplayState state;
long solves = 0;
// The outputs of each block's timed run, by its tag.
std::unordered_map<std::string, std::vector<std::vector<char>>> kept;

// like_items: what a rank has run of each site's items.
struct ItemSample {
  bool warm = false;     // the first item has run
  int timed = 0;         // items timed after it
  double seconds = 0.0;  // their thread CPU time, the clock SMPI charges by
};
std::unordered_map<std::string, ItemSample> item_samples;

// folded_allocation: how many folded allocations the rank made at each site.
std::unordered_map<std::string, int> folded_ordinals;

double thread_seconds() {
  timespec now{};
  (clock_gettime)(CLOCK_THREAD_CPUTIME_ID, &now);  // the real clock, not SMPI's simulated one
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

}  // namespace

int sample_runs() {
  static const int runs = count_from_environment("KOTML_SMPI_SAMPLES", 1000000, 0);
  return runs;
}

bool folding() {
  static const bool fold = parse_fold();
  return fold;
}

bool sampling_blocks() { return state.on && state.step != Replay::Step::real; }

void sampled_block(const char* site, const std::function<void()>& body, std::vector<Bytes> outputs) {
  // SMPI copies the tag and the line into a 132-byte key.
  const std::string tag =
      std::string(site).substr(0, 90) + "#" + std::to_string(state.solve) + "." + std::to_string(state.ordinal++);
  const char* key = tag.c_str();
  bool ran = false;
  SMPI_SAMPLE_LOCAL_TAG(int trip = 0, trip < 1, ++trip, recorded_trips(), -1.0, key) {
    body();
    ran = true;
  }
  charge_nothing_for([&] {
    auto& copies = kept[tag];
    if (ran) {
      copies.assign(outputs.size(), {});
      for (std::size_t k = 0; k < outputs.size(); ++k) {
        const char* from = static_cast<const char*>(outputs[k].data);
        copies[k].assign(from, from + outputs[k].size);
      }
    } else {
      for (std::size_t k = 0; k < outputs.size() && k < copies.size(); ++k)
        if (!copies[k].empty())
          std::memcpy(outputs[k].data, copies[k].data(), std::min(outputs[k].size, copies[k].size()));
    }
  });
}

void sampled_items(const char* site, std::int64_t count, const std::function<void(std::int64_t)>& item) {
  // Per rank and site, over all calls: the first item runs and is charged as it
  // runs (it pays the rank's cold caches and first touches, once, as a real
  // rank does); the next N run and are timed; each item after them is charged
  // their mean and skipped.
  ItemSample& sample = item_samples[site];
  std::int64_t k = 0;
  for (; k < count && !sample.warm; ++k) {
    item(k);
    sample.warm = true;
  }
  for (; k < count && sample.timed < sample_runs(); ++k) {
    const double start = thread_seconds();
    item(k);
    sample.seconds += thread_seconds() - start;
    ++sample.timed;
  }
  if (k < count) {
    smpi_bench_end();  // charges the items that ran
    smpi_execute(sample.seconds / sample.timed * static_cast<double>(count - k));
    smpi_bench_begin();
  }
}

void charge_nothing_for(const std::function<void()>& body) {
  smpi_bench_end();  // charges what ran so far
  body();
  smpi_bench_begin();
}

Replay::Replay() {
  if (sample_runs() > 0 && !state.on) {
    active_ = true;
    state = ReplayState{true, Step::real, ++solves, 0};
  }
}

Replay::~Replay() {
  if (!active_) return;
  state = ReplayState{};
  kept.clear();
}

Replay::Step Replay::begin(int iteration) {
  if (!active_) return Step::real;
  const int real = sample_runs();
  state.ordinal = 0;
  state.step = iteration < real ? Step::real : iteration == real ? Step::record : Step::replay;
  return state.step;
}

void* folded_allocation(std::size_t bytes, const char* site) {
  // smpi/shared-malloc:local keys the memory by (file, line): here the site's
  // name and how many folded allocations this rank made there before. Every
  // rank makes the same allocations in the same order, so its n-th at a site
  // is the others' n-th, and two buffers of one site never share memory: not
  // two that live at once (gw's source and target landmark embeddings), nor an
  // old one that a rank still reads and a new one that a rank ahead of it
  // (simulated ranks run in turns between MPI calls) already writes (each
  // cloud's gathered neighbours). A size of 0 is a plain allocation in SMPI.
  const int ordinal = folded_ordinals[site]++;
  return smpi_shared_malloc(bytes == 0 ? 1 : bytes, site, ordinal);
}

// SimGrid 3.32's smpi_shared_free unmaps the rank's mapping but forgets its
// address only when the last rank at the site frees (the count reaches 0).
// Until then SMPI still takes that address range for shared memory, whose
// messages it does not copy: a plain buffer that a later mmap placed there
// (glibc maps large allocations) would silently receive nothing. It was seen:
// map's Sinkhorn errors went wrong at 64 simulated ranks with
// MALLOC_MMAP_THRESHOLD_=16384. So the range stays reserved, inaccessible and
// without memory behind it, until the process ends.
void release_folded(void* memory, std::size_t bytes) {
  smpi_shared_free(memory);
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::size_t length = (std::max<std::size_t>(bytes, 1) + page - 1) / page * page;
  void* reserved = mmap(memory, length, PROT_NONE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (reserved != memory) {
    std::fprintf(stderr, "kotml: bug: could not reserve the address range of a folded buffer (%s)\n",
                 std::strerror(errno));
    std::abort();
  }
}

}  // namespace kotml::sim
