#pragma once
// A named phase of the program as a Kokkos profiling region for its scope
// (Kokkos::Profiling::ScopedRegion, which Kokkos 3.4 lacks): Kokkos tools such
// as the space-time stack and the kernel timers attribute kernels to it.

#include <Kokkos_Core.hpp>

#include <string>

namespace kotml {

class ProfilingRegion {
 public:
  explicit ProfilingRegion(const std::string& name) { Kokkos::Profiling::pushRegion(name); }
  ~ProfilingRegion() { Kokkos::Profiling::popRegion(); }
  ProfilingRegion(const ProfilingRegion&) = delete;
  ProfilingRegion& operator=(const ProfilingRegion&) = delete;
};

}  // namespace kotml
