#pragma once
// Type aliases for spaces and Views, so that kernels and drivers never spell out
// full View types (ExaMiniMD's types.h habit). Everything that runs in parallel is
// templated on, or defaults to, these spaces.
//
// ExecSpace is Kokkos' default execution space unless the build names another
// with KOTML_EXECUTION_SPACE (cmake/KotmlSpaces.cmake builds the library areas
// once more per execution space, so that the unit tests run on each). Host work
// then runs on ExecSpace too when it can reach host memory: a Serial build of
// the areas runs nothing on OpenMP.

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace kotml {

#ifdef KOTML_EXECUTION_SPACE
using ExecSpace = KOTML_EXECUTION_SPACE;
#else
using ExecSpace = Kokkos::DefaultExecutionSpace;
#endif
using MemSpace = ExecSpace::memory_space;
using HostSpace = Kokkos::HostSpace;
using HostExecSpace =
    std::conditional_t<Kokkos::SpaceAccessibility<ExecSpace, HostSpace>::accessible, ExecSpace,
                       Kokkos::DefaultHostExecutionSpace>;

/// Row-major on every backend: donor point clouds and cost tiles are read along
/// rows, and host code fills them row by row from HDF5.
template <class T, class Space = MemSpace>
using Matrix = Kokkos::View<T**, Kokkos::LayoutRight, Space>;
template <class T, class Space = MemSpace>
using Vector = Kokkos::View<T*, Space>;

template <class T>
using HostMatrix = Matrix<T, HostSpace>;
template <class T>
using HostVector = Vector<T, HostSpace>;

/// Global identifiers (donors, pairs, sources) are 64-bit so that pair ids of
/// large cohorts and node ids of large graphs never overflow.
using GlobalId = std::int64_t;

/// Allocation without zero-fill, for buffers that a kernel overwrites at once.
inline auto no_init(const std::string& label) {
  return Kokkos::view_alloc(Kokkos::WithoutInitializing, label);
}

/// True when host and device share one memory space, so a host mirror is the
/// View itself and staging copies can be skipped.
inline constexpr bool device_is_host =
    std::is_same<MemSpace, HostSpace>::value;

}  // namespace kotml
