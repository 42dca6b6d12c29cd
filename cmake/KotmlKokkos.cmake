# Finds Kokkos and Kokkos Kernels and exposes them as two targets that work the
# same way for Debian's TriBITS-built Kokkos 3.4.1 and for a standalone Kokkos 4.x:
#
#   kotml::kokkos         Kokkos core (and containers, algorithms)
#   kotml::kokkoskernels  Kokkos Kernels (BLAS, batched)
#
# Debian 12's packages have two defects this module works around (see
# ../shared/specs/hpc-anchors.md §0): the imported Kokkos::kokkos target carries an
# include path one directory too high (/usr/lib/include), and Kokkos Kernels exports
# no Kokkos::kokkoskernels target, only variables.

find_package(Kokkos REQUIRED)

if(Kokkos_VERSION VERSION_LESS 3.5 AND TARGET Kokkos::kokkos)
  # The TriBITS config computes its prefix from the multiarch path and lands in
  # /usr/lib; the variable Kokkos_INCLUDE_DIRS is right, the target is not.
  set_target_properties(Kokkos::kokkos PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${Kokkos_INCLUDE_DIRS}")
endif()

add_library(kotml_kokkos INTERFACE)
add_library(kotml::kokkos ALIAS kotml_kokkos)
if(TARGET Kokkos::kokkos)
  target_link_libraries(kotml_kokkos INTERFACE Kokkos::kokkos)
else()
  target_include_directories(kotml_kokkos SYSTEM INTERFACE ${Kokkos_INCLUDE_DIRS})
  target_link_libraries(kotml_kokkos INTERFACE ${Kokkos_LIBRARIES})
endif()

find_package(KokkosKernels REQUIRED)
add_library(kotml_kokkoskernels INTERFACE)
add_library(kotml::kokkoskernels ALIAS kotml_kokkoskernels)
if(TARGET Kokkos::kokkoskernels)
  target_link_libraries(kotml_kokkoskernels INTERFACE Kokkos::kokkoskernels)
else()
  target_include_directories(kotml_kokkoskernels SYSTEM INTERFACE ${KokkosKernels_INCLUDE_DIRS})
  target_link_libraries(kotml_kokkoskernels INTERFACE ${KokkosKernels_LIBRARIES} kotml::kokkos)
endif()

# Backends, for the configure summary and the version string. Kokkos 4 exports
# Kokkos_DEVICES; the TriBITS config sets it too ("SERIAL").
set(KOTML_KOKKOS_BACKENDS "")
foreach(_backend SERIAL OPENMP THREADS CUDA HIP SYCL)
  if(Kokkos_DEVICES MATCHES "${_backend}" OR Kokkos_ENABLE_${_backend})
    list(APPEND KOTML_KOKKOS_BACKENDS ${_backend})
  endif()
endforeach()
list(REMOVE_DUPLICATES KOTML_KOKKOS_BACKENDS)
if(NOT KOTML_KOKKOS_BACKENDS)
  set(KOTML_KOKKOS_BACKENDS "unknown")
endif()

# No contraction of a·b + c into one fused multiply-add on the device either:
# host code is built without it (baseline x86-64 has no FMA, and the SIMD files
# say -ffp-contract=off), so with -fmad=false a kernel that adds in the same
# order gives the same bits on a GPU as on a CPU (a kNN length, a direct-form
# cost). Tile products and reductions whose order differs by backend still
# differ in the last bits; results stay bit-identical across rank counts.
if("CUDA" IN_LIST KOTML_KOKKOS_BACKENDS)
  target_compile_options(kotml_kokkos INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-fmad=false>)
endif()

set(KOTML_KOKKOSKERNELS_VERSION "${KokkosKernels_VERSION}")
if(NOT KOTML_KOKKOSKERNELS_VERSION)
  # Debian's TriBITS config leaves the version empty; it ships with Kokkos 3.4.1.
  set(KOTML_KOKKOSKERNELS_VERSION "${Kokkos_VERSION} (Trilinos)")
endif()

# The Kokkos versions kotml's whole suite has passed against.
set(KOTML_KOKKOS_TESTED
    "3.4.1 (Debian 12, Serial), 4.6.1 (OpenMP) and 4.6.99 at git 28848dfa8 with the legacy View (OpenMP)")
if(NOT (Kokkos_VERSION VERSION_EQUAL 3.4.1 OR
        (Kokkos_VERSION VERSION_GREATER_EQUAL 4.6 AND Kokkos_VERSION VERSION_LESS_EQUAL 4.6.99)))
  message(WARNING "kotml has not been tested with Kokkos ${Kokkos_VERSION} (tested: ${KOTML_KOKKOS_TESTED})")
endif()

# The default-constructed View probe. GCC 12.2-12.4 miscompile the default
# constructor of the mdspan-based View of Kokkos' development line (4.6.99
# before Kokkos PR 8223, issues kokkos#7464 and kokkos#8187): the View is
# constant-initialised and the empty [[no_unique_address]] accessor that shares
# the reference-count word's address zeroes it, so the first assignment to, or
# the destruction of, any `Kokkos::View<double*> v;` dereferences a null
# allocation record. Every kotml binary then crashes. A version test cannot
# tell an affected build from a fixed one (the same version number with the
# legacy View, another compiler, a patched snapshot), so this builds and runs
# the failing pattern with the compiler and Kokkos being configured.
option(KOTML_SKIP_KOKKOS_VIEW_PROBE "do not run the default-constructed Kokkos::View probe at configure time" OFF)
set(_probe_key "${Kokkos_DIR}|${CMAKE_CXX_COMPILER}|${CMAKE_CXX_COMPILER_VERSION}")
if(NOT KOTML_SKIP_KOKKOS_VIEW_PROBE AND NOT KOTML_KOKKOS_VIEW_PROBE_PASSED STREQUAL _probe_key)
  set(_probe_dir "${CMAKE_BINARY_DIR}/CMakeFiles/kotml_kokkos_view_probe")
  file(WRITE "${_probe_dir}/probe.cpp" [=[
#include <Kokkos_Core.hpp>
#include <cstdio>
// No Kokkos::initialize: empty Views need none, and a device backend may have
// no device on the build machine.
int main() {
  {
    Kokkos::View<double*> empty;
    Kokkos::View<double*> assigned;
    assigned = empty;
  }
  std::puts("kotml-kokkos-view-probe-ok");
  return 0;
}
]=])
  if(TARGET Kokkos::kokkos)
    set(_probe_link Kokkos::kokkos)
    set(_probe_includes "")
  else()
    set(_probe_link ${Kokkos_LIBRARIES})
    set(_probe_includes "-DINCLUDE_DIRECTORIES=${Kokkos_INCLUDE_DIRS}")
  endif()
  try_run(_probe_run _probe_compiled "${_probe_dir}/build" "${_probe_dir}/probe.cpp"
    CMAKE_FLAGS ${_probe_includes}
    COMPILE_DEFINITIONS -O2
    LINK_LIBRARIES ${_probe_link}
    CXX_STANDARD 17
    CXX_STANDARD_REQUIRED ON
    COMPILE_OUTPUT_VARIABLE _probe_compile_output
    RUN_OUTPUT_VARIABLE _probe_run_output)
  set(_device_backend OFF)
  foreach(_backend CUDA HIP SYCL)
    if(_backend IN_LIST KOTML_KOKKOS_BACKENDS)
      set(_device_backend ON)
    endif()
  endforeach()
  if(NOT _probe_compiled)
    message(FATAL_ERROR "A 10-line Kokkos program does not build with this compiler and Kokkos "
      "(${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}, Kokkos ${Kokkos_VERSION}); "
      "compiler output:\n${_probe_compile_output}")
  elseif(_probe_run EQUAL 0 AND _probe_run_output MATCHES "kotml-kokkos-view-probe-ok")
    set(KOTML_KOKKOS_VIEW_PROBE_PASSED "${_probe_key}" CACHE INTERNAL "the Kokkos and compiler the View probe passed with")
    message(STATUS "Default-constructed Kokkos::View probe: passed")
  elseif(_device_backend OR CMAKE_CROSSCOMPILING)
    # The program may fail to start for want of a device driver library.
    message(WARNING "The default-constructed Kokkos::View probe did not run here (${_probe_run}). "
      "If kotml's binaries crash in SharedAllocationRecord, see the README's Kokkos section.")
  else()
    message(FATAL_ERROR
      "This compiler (${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}) with Kokkos ${Kokkos_VERSION} "
      "crashes on `{ Kokkos::View<double*> v; }` (probe: ${_probe_run}), and so would every kotml binary. The known cause: "
      "GCC 12.2-12.4 miscompile the default constructor of the mdspan-based View of Kokkos' development "
      "line before Kokkos PR 8223 (kokkos#8187). Use Kokkos >= 4.7.0 or a release <= 4.6.x, or rebuild this "
      "Kokkos with -DKokkos_ENABLE_IMPL_VIEW_LEGACY=ON, or build with GCC >= 13 or clang++; "
      "-DKOTML_SKIP_KOKKOS_VIEW_PROBE=ON configures anyway.")
  endif()
endif()

# A Kokkos (and Kokkos Kernels) built as shared libraries outside the system
# directories: every binary carries their directories in its run path, as
# DT_RPATH (not DT_RUNPATH, which the loader ignores for the libraries' own
# dependencies, e.g. libkokkoskernels' libkokkoscontainers), so that nothing
# needs LD_LIBRARY_PATH.
foreach(_package Kokkos KokkosKernels)
  if(${_package}_DIR AND NOT "${${_package}_DIR}" MATCHES "^/usr/")
    get_filename_component(_libdir "${${_package}_DIR}/../.." ABSOLUTE)
    file(GLOB _shared "${_libdir}/lib*${CMAKE_SHARED_LIBRARY_SUFFIX}*")
    if(_shared)
      list(APPEND CMAKE_BUILD_RPATH "${_libdir}")
      list(APPEND CMAKE_INSTALL_RPATH "${_libdir}")
      set(KOTML_KOKKOS_RPATH ON)
    endif()
  endif()
endforeach()
if(KOTML_KOKKOS_RPATH)
  list(REMOVE_DUPLICATES CMAKE_BUILD_RPATH)
  list(REMOVE_DUPLICATES CMAKE_INSTALL_RPATH)
  add_link_options("LINKER:--disable-new-dtags")
endif()
