#pragma once
// The phase timers of every rank (kotml/core/phase_timers.hpp) as one table:
// min, mean and max seconds over ranks per phase, its share of the command's
// total, its load imbalance max/mean and the rank that took the max, laid out
// as LAMMPS' "MPI task timing breakdown" and ArborX's TimeMonitor report them.
// Rank 0 prints it and the CLI writes it as timers.json (schema:
// docs/schemas/timers.schema.json).
//
// Phases are matched by name across ranks, in rank 0's order, then any phase
// only other ranks ran, in rank order; a rank that never ran a phase counts 0 s
// for it. "other" is the total less the outermost phases: the time no phase
// names (startup, option parsing, small serial steps).

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "kotml/dist/comm.hpp"

namespace kotml::dist {

struct SecondsOverRanks {
  double min = 0, mean = 0, max = 0;
  // The ranks that took `min` and `max` (the lowest of equals). In a phase's
  // nested agreement, min_rank arrived last: the rank the others waited for.
  int min_rank = 0, max_rank = 0;
};

struct PhaseRow {
  std::string name;
  int depth = 0;
  std::int64_t calls = 0;  // the most any rank made
  SecondsOverRanks seconds;
  double share = 0;      // mean / mean total
  double imbalance = 1;  // max / mean (1 when the mean is 0)
};

struct TimerSummary {
  int ranks = 1;
  SecondsOverRanks total;
  std::vector<PhaseRow> phases;
  PhaseRow other;
};

/// Collective: every rank gets the same summary.
TimerSummary summarize_timers(const Comm& comm);

nlohmann::json to_json(const TimerSummary& summary);

/// The table as text lines (without a trailing newline on the last).
std::string timer_table(const TimerSummary& summary, const std::string& command);

}  // namespace kotml::dist
