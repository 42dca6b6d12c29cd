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

set(KOTML_KOKKOSKERNELS_VERSION "${KokkosKernels_VERSION}")
if(NOT KOTML_KOKKOSKERNELS_VERSION)
  # Debian's TriBITS config leaves the version empty; it ships with Kokkos 3.4.1.
  set(KOTML_KOKKOSKERNELS_VERSION "${Kokkos_VERSION} (Trilinos)")
endif()

# The Kokkos versions kotml's whole suite has passed against, and the one it
# refuses. Kokkos 4.6.99 is the development line between 4.6 and 4.7 (the
# mdspan-based View): in the snapshot tried (git 28848dfa8, GCC 12.2, OpenMP,
# shared and static libraries) the destructor of a default-constructed View
# crashes in SharedAllocationRecord::decrement, so every kotml binary did.
set(KOTML_KOKKOS_TESTED "3.4.1 (Debian 12, Serial) and 4.6.1 (OpenMP)")
option(KOTML_ALLOW_BROKEN_KOKKOS "configure against a Kokkos version known to crash (4.6.99)" OFF)
if(Kokkos_VERSION VERSION_EQUAL 4.6.99 AND NOT KOTML_ALLOW_BROKEN_KOKKOS)
  message(FATAL_ERROR
    "Kokkos 4.6.99 (a development snapshot between 4.6 and 4.7) is refused: in the snapshot tested "
    "(git 28848dfa8) `{ Kokkos::View<double*> v; }` crashes on destruction, and so does every kotml "
    "binary. Use a Kokkos release (tested: ${KOTML_KOKKOS_TESTED}), or "
    "-DKOTML_ALLOW_BROKEN_KOKKOS=ON to try another snapshot.")
elseif(NOT (Kokkos_VERSION VERSION_EQUAL 3.4.1 OR
            (Kokkos_VERSION VERSION_GREATER_EQUAL 4.6 AND Kokkos_VERSION VERSION_LESS 4.6.99)))
  message(WARNING "kotml has not been tested with Kokkos ${Kokkos_VERSION} (tested: ${KOTML_KOKKOS_TESTED})")
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
