#include "kotml/core/simd_levels.hpp"

#include "kotml/core/error.hpp"

namespace kotml::simd {

namespace detail {

std::atomic<int> chosen_level{-1};

namespace {

Level best_available() {
  for (int k = 2; k > 0; --k)
    if (available(all_levels[k])) return all_levels[k];
  return Level::baseline;
}

}  // namespace

int detect_level() {
  const int best = static_cast<int>(best_available());
  int expected = -1;
  chosen_level.compare_exchange_strong(expected, best, std::memory_order_relaxed);
  return chosen_level.load(std::memory_order_relaxed);
}

}  // namespace detail

const char* name(Level level) {
  switch (level) {
    case Level::x86_64_v4: return "x86-64-v4";
    case Level::x86_64_v3: return "x86-64-v3";
    default: return "baseline";
  }
}

bool available(Level level) {
  if (level == Level::baseline) return true;
#if KOTML_SIMD_HAS_LEVELS
  __builtin_cpu_init();
#if defined(__clang__)
  // Clang 14 knows no level names here; these features imply the rest of
  // each level on every CPU that has them (F16C, LZCNT, MOVBE since Haswell).
  const bool v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                  __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2");
  const bool v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
                  __builtin_cpu_supports("avx512vl");
#else
  const bool v3 = __builtin_cpu_supports("x86-64-v3"), v4 = __builtin_cpu_supports("x86-64-v4");
#endif
  return level == Level::x86_64_v4 ? v4 : v3;
#else
  return false;
#endif
}

ScopedLevel::ScopedLevel(Level level) : previous_(active()) {
  internal_check(available(level), std::string("SIMD level ") + name(level) + " chosen but not available");
  detail::chosen_level.store(static_cast<int>(level), std::memory_order_relaxed);
}

ScopedLevel::~ScopedLevel() { detail::chosen_level.store(static_cast<int>(previous_), std::memory_order_relaxed); }

}  // namespace kotml::simd
