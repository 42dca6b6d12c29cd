#pragma once
// Wall-clock time per named phase of a command, on this rank (the numbers that
// dist/timer_summary.hpp turns into min/mean/max over ranks).
//
//   { const auto timed = kotml::timers::scope("solve"); ... }
//
// A scope is also a Kokkos profiling region ("kotml::solve"), so Kokkos tools
// see the same phases, and it fences the default execution space when it ends,
// so that a kernel launched inside the phase is charged to it on an
// asynchronous backend too. Scopes nest: a scope opened inside "solve" is
// recorded as "solve/sinkhorn", and the shares of the total are taken over the
// outermost phases only. Phases keep the order they first ran in.
//
// The registry is per process and host-only; kernels never touch it. The CLI
// resets it when a command starts; library code only opens scopes.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace kotml::timers {

struct PhaseTime {
  std::string name;       // "solve" or "solve/sinkhorn": its depth is the number of '/'
  double seconds = 0.0;   // summed over every time it ran
  std::int64_t calls = 0;
};

class Scope {
 public:
  explicit Scope(const std::string& phase);
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
  Scope(Scope&& other) noexcept;
  Scope& operator=(Scope&&) = delete;
  ~Scope();

 private:
  std::size_t index_;
  std::chrono::steady_clock::time_point start_;
  bool active_;
};

/// Times the phase until the returned scope ends.
inline Scope scope(const std::string& phase) { return Scope(phase); }

/// f() timed as the phase; its value is returned.
template <class F>
decltype(auto) timed(const std::string& phase, F&& f) {
  const Scope running(phase);
  return f();
}

/// Forgets every phase and restarts the total clock (a command's start).
void reset();

/// This rank's phases in first-run order, and the seconds since reset().
std::vector<PhaseTime> phases();
double seconds_since_reset();

}  // namespace kotml::timers
