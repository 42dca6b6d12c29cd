#include "kotml/core/phase_timers.hpp"

#include <Kokkos_Core.hpp>

namespace kotml::timers {
namespace {

using Clock = std::chrono::steady_clock;

struct Registry {
  std::vector<PhaseTime> phases;
  std::vector<std::size_t> open;  // indices of the scopes running now, outermost first
  Clock::time_point started = Clock::now();
};

Registry& registry() {
  static Registry r;
  return r;
}

std::size_t index_of(Registry& r, const std::string& name) {
  for (std::size_t i = 0; i < r.phases.size(); ++i)
    if (r.phases[i].name == name) return i;
  r.phases.push_back({name, 0.0, 0});
  return r.phases.size() - 1;
}

}  // namespace

Scope::Scope(const std::string& phase) : active_(true) {
  Registry& r = registry();
  const std::string name = r.open.empty() ? phase : r.phases[r.open.back()].name + "/" + phase;
  index_ = index_of(r, name);
  r.open.push_back(index_);
  Kokkos::Profiling::pushRegion("kotml::" + name);
  start_ = Clock::now();
}

Scope::Scope(Scope&& other) noexcept : index_(other.index_), start_(other.start_), active_(other.active_) {
  other.active_ = false;
}

Scope::~Scope() {
  if (!active_) return;
  Kokkos::fence();
  Registry& r = registry();
  if (index_ >= r.phases.size()) return;  // reset() while it ran: nothing to charge
  PhaseTime& p = r.phases[index_];
  p.seconds += std::chrono::duration<double>(Clock::now() - start_).count();
  ++p.calls;
  // Scopes end in reverse order of their start (they are locals); an exception
  // unwinding through several ends them the same way.
  if (!r.open.empty() && r.open.back() == index_) r.open.pop_back();
  Kokkos::Profiling::popRegion();
}

void reset() {
  Registry& r = registry();
  r.phases.clear();
  r.open.clear();
  r.started = Clock::now();
}

std::vector<PhaseTime> phases() { return registry().phases; }

double seconds_since_reset() { return std::chrono::duration<double>(Clock::now() - registry().started).count(); }

}  // namespace kotml::timers
