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
