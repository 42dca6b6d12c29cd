#pragma once
// Host SIMD levels. The exp- and bandwidth-bound host loops (Sinkhorn rows and
// tiles, GW momentum, projections, simplex pricing) are compiled once per x86
// level, x86-64-v4 (AVX-512), x86-64-v3 (AVX2 + FMA) and the baseline, and
// each call runs the copy for the active level: the best this CPU has, so a
// binary built for baseline x86-64, as Debian's packages are, still runs them
// at the full vector width. Every copy must give the same bits (the files are
// built without FMA contraction, src/CMakeLists.txt); tests/ot/test_simd_levels
// runs whole solves at each level this CPU has and compares them bit for bit,
// which is why a level can be chosen (ScopedLevel). Elsewhere (not GCC or
// clang on x86-64) only the baseline copy exists.
//
//   KOTML_SIMD_DISPATCHED(ret, name, (params), (args), body-expression)
//
// defines `ret name(params)` returning body-expression, compiled per level.
// The body is an always_inline template, so that each level inlines its own.
//
//   KOTML_SIMD_DISPATCH_TO(ret, name, (params), (args), v4_fn, v3_fn, baseline_fn)
//
// defines `ret name(params)` calling a kernel written per level, for loops
// whose best form differs by level (intrinsics of one ISA): v4_fn and v3_fn
// carry their own target attributes and exist only where KOTML_SIMD_HAS_LEVELS
// is 1; elsewhere name calls baseline_fn.

#include <atomic>

namespace kotml::simd {

enum class Level : int { baseline = 0, x86_64_v3 = 1, x86_64_v4 = 2 };

inline constexpr Level all_levels[] = {Level::baseline, Level::x86_64_v3, Level::x86_64_v4};

/// "baseline", "x86-64-v3" or "x86-64-v4".
const char* name(Level level);

/// Whether this build has a copy for `level` and this CPU can run it.
bool available(Level level);

namespace detail {
extern std::atomic<int> chosen_level;  // -1 until the first call of active()
int detect_level();
}  // namespace detail

/// The level host kernels run at now.
inline Level active() {
  const int level = detail::chosen_level.load(std::memory_order_relaxed);
  return static_cast<Level>(level >= 0 ? level : detail::detect_level());
}

/// Runs host kernels at `level` (which must be available) until destroyed;
/// for tests and benchmarks, outside parallel regions.
class ScopedLevel {
 public:
  explicit ScopedLevel(Level level);
  ~ScopedLevel();
  ScopedLevel(const ScopedLevel&) = delete;
  ScopedLevel& operator=(const ScopedLevel&) = delete;

 private:
  Level previous_;
};

}  // namespace kotml::simd

#if defined(__x86_64__) && defined(__GNUC__)
#define KOTML_SIMD_HAS_LEVELS 1
#define KOTML_SIMD_DISPATCHED(ret, name, params, args, ...)                                          \
  __attribute__((target("arch=x86-64-v4"))) static ret name##_x86_64_v4 params { return __VA_ARGS__; } \
  __attribute__((target("arch=x86-64-v3"))) static ret name##_x86_64_v3 params { return __VA_ARGS__; } \
  static ret name##_baseline params { return __VA_ARGS__; }                                          \
  ret name params {                                                                                  \
    switch (::kotml::simd::active()) {                                                               \
      case ::kotml::simd::Level::x86_64_v4: return name##_x86_64_v4 args;                            \
      case ::kotml::simd::Level::x86_64_v3: return name##_x86_64_v3 args;                            \
      default: return name##_baseline args;                                                          \
    }                                                                                                \
  }
#define KOTML_SIMD_DISPATCH_TO(ret, name, params, args, v4_fn, v3_fn, baseline_fn) \
  ret name params {                                                              \
    switch (::kotml::simd::active()) {                                           \
      case ::kotml::simd::Level::x86_64_v4: return v4_fn args;                   \
      case ::kotml::simd::Level::x86_64_v3: return v3_fn args;                   \
      default: return baseline_fn args;                                          \
    }                                                                            \
  }
#else
#define KOTML_SIMD_HAS_LEVELS 0
#define KOTML_SIMD_DISPATCHED(ret, name, params, args, ...) \
  ret name params { return __VA_ARGS__; }
#define KOTML_SIMD_DISPATCH_TO(ret, name, params, args, v4_fn, v3_fn, baseline_fn) \
  ret name params { return baseline_fn args; }
#endif
