#pragma once
// Progress of long loops on rank 0: epochs and splits, Sinkhorn and GW
// iterations, APSP sources, DE tests.
//
// How it shows (set once per run by the CLI from --quiet / --progress):
// - on a terminal (stderr is a tty), or with --progress: one line, redrawn in
//   place at most ten times a second: what, done/total, a detail such as the
//   current error, the rate, an ETA and the time so far, cut to the terminal's
//   width; erased when the loop ends;
// - otherwise (batch jobs, CI logs, mpirun's forwarded stderr): a plain line
//   at most every `plain_interval` seconds, the first one only after that long,
//   so short runs print nothing;
// - with --quiet: nothing.
// Only rank 0 writes. Other ranks may construct and update a Progress: it costs
// a clock read. The log's own lines (warnings, --verbose) erase a drawn line
// first, so the two never share a terminal line.
//
// A loop whose length is unknown (a Sinkhorn that stops at its threshold) may
// give an ETA of its own through `update(done, detail, eta_seconds)`: Sinkhorn
// extrapolates the error's geometric decay to the threshold.

#include <chrono>
#include <cstdint>
#include <string>

namespace kotml::log {

enum class ProgressMode {
  automatic,  // updating line on a terminal, plain lines otherwise
  forced,     // updating line even when stderr is not a terminal (--progress)
  quiet,      // nothing (--quiet)
};

void set_progress_mode(ProgressMode mode);
ProgressMode progress_mode();

/// Seconds between two plain lines when stderr is not a terminal.
inline constexpr double plain_interval = 5.0;

/// "0:07", "12:03", "1:02:03"; "?" for a negative or non-finite value.
std::string clock_text(double seconds);

class Progress {
 public:
  /// `what` names the loop ("epoch", "sinkhorn"); `total` is its number of
  /// steps, or 0 when unknown; `unit` is what a step is ("it", "sources");
  /// `first` steps were done before this run (a restart), not counted in the
  /// rate.
  Progress(std::string what, std::int64_t total, std::string unit, std::int64_t first = 0);
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress();

  /// What `update` takes as its ETA besides seconds: estimate it from the rate
  /// and the total, or show none (a loop that stops at a threshold, before it
  /// can tell).
  static constexpr double eta_from_rate = -1.0;
  static constexpr double eta_unknown = -2.0;

  /// `done` steps of `total` are finished.
  void update(std::int64_t done, const std::string& detail = "", double eta_seconds = eta_from_rate);
  /// Erases the line (terminal) or does nothing more (plain). Idempotent.
  void finish();

  /// The text a line shows; public for the tests.
  static std::string line_text(const std::string& what, std::int64_t first, std::int64_t done,
                               std::int64_t total, const std::string& unit, double elapsed,
                               const std::string& detail, double eta_seconds);

 private:
  using Clock = std::chrono::steady_clock;
  double elapsed() const;
  std::string full_what() const;

  std::string what_;
  std::int64_t total_;
  std::string unit_;
  std::int64_t first_;
  bool drawing_;  // updating line on rank 0
  bool plain_;    // plain lines on rank 0
  Clock::time_point start_;
  double last_written_ = 0.0;
  bool finished_ = false;
};

/// Names the outer loop a Progress runs in ("split 2/5"): lines drawn while it
/// lives start with it. One level; a new context replaces the old one until it
/// ends.
class ProgressContext {
 public:
  explicit ProgressContext(std::string text);
  ProgressContext(const ProgressContext&) = delete;
  ProgressContext& operator=(const ProgressContext&) = delete;
  ~ProgressContext();

 private:
  std::string previous_;
};

/// "3.21e-02": an error or a tolerance in a progress line.
std::string scientific_text(double value);

/// A number in a message, with six significant digits: "0.05", "1e-09",
/// "-2.5e+12", "inf". std::to_string's six fixed decimals print a threshold
/// of 1e-9 and an error of 3e-8 both as "0.000000".
std::string number_text(double value);

/// Iterations until an error that fell from `previous` to `current` over
/// `step` iterations reaches `threshold`, if it keeps falling at that geometric
/// rate; -1 when it did not fall. What a converging loop gives as its ETA.
double iterations_to_threshold(double previous, double current, double step, double threshold);

/// Erases a drawn progress line before other output to stderr; called by
/// warn() and info(). A no-op when no line is drawn.
void clear_progress_line();

}  // namespace kotml::log
