// Phase timers (kotml/core/phase_timers.hpp) and their summary over ranks
// (kotml/dist/timer_summary.hpp): names agreed across ranks in rank 0's order,
// min <= mean <= max, nested phases, calls, the share of the total and the
// table and JSON forms. Durations come from sleeps, so the checks are bounds,
// except the order of the ranks in "read", which is forced.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <thread>

#include "kotml/core/phase_timers.hpp"
#include "kotml/dist/comm.hpp"
#include "kotml/dist/timer_summary.hpp"

using namespace kotml;

namespace {

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

const dist::PhaseRow& row_named(const dist::TimerSummary& s, const std::string& name) {
  for (const auto& row : s.phases)
    if (row.name == name) return row;
  throw std::runtime_error("no phase " + name);
}

double seconds_of(const std::string& name) {
  for (const auto& phase : timers::phases())
    if (phase.name == name) return phase.seconds;
  throw std::runtime_error("no phase " + name);
}

// Rank r times "read" for at least 10 (r + 1) ms and longer than rank r - 1
// measured it. Sleeps alone overshoot under load and could reorder the ranks;
// passing each rank's measured time on makes the order hold on any schedule.
void time_read_longer_on_each_later_rank(const dist::Comm& comm) {
  std::optional<timers::Scope> read;
  read.emplace("read");
  const auto started = std::chrono::steady_clock::now();
  double previous = 0.0;
  for (int turn = 0; turn < comm.size(); ++turn) {
    double measured = 0.0;
    if (comm.rank() == turn) {
      const double target = std::max(0.010 * (turn + 1), previous + 0.002);
      while (std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() < target)
        sleep_ms(1);
      read.reset();  // the scope's time includes the stopwatch's, so it exceeds previous
      measured = seconds_of("read");
    }
    comm.bcast(&measured, sizeof measured, turn);
    previous = measured;
  }
}

}  // namespace

TEST(TimerSummary, PhasesAgreeAcrossRanksWithMinMeanMaxAndNesting) {
  const dist::Comm comm;
  timers::reset();
  time_read_longer_on_each_later_rank(comm);
  for (int call = 0; call < 3; ++call) {
    const auto solve = timers::scope("solve");
    const auto inner = timers::scope("sinkhorn");
    sleep_ms(2);
  }
  if (comm.rank() == comm.size() - 1) {
    const auto only_here = timers::scope("last rank only");
    sleep_ms(5);
  }
  const auto s = dist::summarize_timers(comm);
  EXPECT_EQ(s.ranks, comm.size());
  ASSERT_EQ(s.phases.size(), 4u);
  // Rank 0's order, then what only another rank ran.
  EXPECT_EQ(s.phases[0].name, "read");
  EXPECT_EQ(s.phases[1].name, "solve");
  EXPECT_EQ(s.phases[2].name, "solve/sinkhorn");
  EXPECT_EQ(s.phases[3].name, "last rank only");
  EXPECT_EQ(s.phases[2].depth, 1);
  EXPECT_EQ(row_named(s, "solve").calls, 3);

  const auto& read = row_named(s, "read");
  EXPECT_GE(read.seconds.min, 0.010);
  EXPECT_GE(read.seconds.max, 0.010 * comm.size());
  EXPECT_LE(read.seconds.min, read.seconds.mean);
  EXPECT_LE(read.seconds.mean, read.seconds.max);
  if (comm.size() > 1) {
    EXPECT_GT(read.imbalance, 1.0);
  }
  // The last rank slept longest, and alone ran "last rank only".
  EXPECT_EQ(read.seconds.max_rank, comm.size() - 1);
  EXPECT_EQ(read.seconds.min_rank, 0);
  // A nested phase is inside its parent.
  EXPECT_LE(row_named(s, "solve/sinkhorn").seconds.max, row_named(s, "solve").seconds.max);
  // Ranks that never ran a phase count 0 s for it.
  const auto& only = row_named(s, "last rank only");
  EXPECT_EQ(only.seconds.min, comm.size() > 1 ? 0.0 : only.seconds.max);
  EXPECT_GE(only.seconds.max, 0.005);
  EXPECT_EQ(only.seconds.max_rank, comm.size() - 1);

  // The outermost phases and "other" make the total on every rank.
  double outermost_mean = s.other.seconds.mean;
  for (const auto& row : s.phases)
    if (row.depth == 0) outermost_mean += row.seconds.mean;
  EXPECT_NEAR(outermost_mean, s.total.mean, 1e-9 + 1e-9 * s.total.mean);
  EXPECT_NEAR(read.share, read.seconds.mean / s.total.mean, 1e-12);

  // Every rank holds the same summary.
  const auto json = dist::to_json(s);
  const auto texts = comm.allgather_strings(json.dump());
  for (const auto& text : texts) EXPECT_EQ(text, texts[0]);
  EXPECT_EQ(json["phases"].size(), 4u);
  EXPECT_EQ(json["phases"][2]["name"], "solve/sinkhorn");
  EXPECT_EQ(json["phases"][0]["seconds"]["max_rank"], comm.size() - 1);
  const std::string table = dist::timer_table(s, "test");
  EXPECT_EQ(table.rfind("kotml test: time per phase over " + std::to_string(comm.size()) + " rank(s)", 0), 0u);
  EXPECT_NE(table.find("\n    sinkhorn "), std::string::npos) << table;  // nested: indented, own name
  EXPECT_NE(table.find("\n  other "), std::string::npos) << table;
  EXPECT_NE(table.find("\n  total "), std::string::npos) << table;
}

TEST(TimerSummary, ResetForgetsPhases) {
  const dist::Comm comm;
  { const auto t = timers::scope("before"); }
  timers::reset();
  EXPECT_TRUE(timers::phases().empty());
  EXPECT_LT(timers::seconds_since_reset(), 1.0);
  const auto s = dist::summarize_timers(comm);
  EXPECT_TRUE(s.phases.empty());
}
