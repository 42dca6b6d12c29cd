# Execution spaces the library areas and the unit tests are built for (issue 17,
# "tests run per backend").
#
# The plain targets (kotml_ot, test_ot, ...) use Kokkos' default execution space:
# they are what the program, the benchmarks and the fuzzers link. For every other
# space of the Kokkos build named in KOTML_TEST_EXECUTION_SPACES, each area is
# built once more as kotml_<area>_<space> with KOTML_EXECUTION_SPACE set
# (kotml/core/types.hpp makes it kotml::ExecSpace), and each unit test that is not
# a command-line test as <test>_<space>, from the same sources. So a Kokkos 4
# build with OpenMP and Serial runs every unit test on OpenMP and on Serial, in
# the manner of Cabana's per-backend test instantiation, while a Serial-only
# build (Debian 12's Kokkos 3.4.1) builds each once, as before.
#
# kotml builds its areas as compiled libraries around one ExecSpace alias, so an
# instantiation is a build of the areas rather than a template argument: the
# same code, compiled for the other space.

# Kokkos' backend names (KOTML_KOKKOS_BACKENDS) to execution space classes, in
# the order Kokkos picks its default: a device first, then host threads, then Serial.
set(_kotml_space_order CUDA HIP SYCL OPENMP THREADS SERIAL)
set(_kotml_space_CUDA Cuda)
set(_kotml_space_HIP HIP)
set(_kotml_space_SYCL SYCL)
set(_kotml_space_OPENMP OpenMP)
set(_kotml_space_THREADS Threads)
set(_kotml_space_SERIAL Serial)

set(_kotml_available_spaces "")
foreach(_backend ${_kotml_space_order})
  if(_backend IN_LIST KOTML_KOKKOS_BACKENDS)
    list(APPEND _kotml_available_spaces ${_kotml_space_${_backend}})
  endif()
endforeach()
if(NOT _kotml_available_spaces)
  set(_kotml_available_spaces Serial)
endif()
list(GET _kotml_available_spaces 0 KOTML_DEFAULT_EXECUTION_SPACE)

set(KOTML_TEST_EXECUTION_SPACES "${_kotml_available_spaces}" CACHE STRING
    "Kokkos execution spaces the unit tests run on (default: every one of the Kokkos build; Kokkos' default space is always one)")
set(KOTML_EXTRA_EXECUTION_SPACES "")
foreach(_space ${KOTML_TEST_EXECUTION_SPACES})
  if(NOT _space IN_LIST _kotml_available_spaces)
    message(FATAL_ERROR "KOTML_TEST_EXECUTION_SPACES names ${_space}, which this Kokkos does not have "
      "(it has: ${_kotml_available_spaces})")
  endif()
  if(NOT _space STREQUAL KOTML_DEFAULT_EXECUTION_SPACE)
    list(APPEND KOTML_EXTRA_EXECUTION_SPACES ${_space})
  endif()
endforeach()
list(REMOVE_DUPLICATES KOTML_EXTRA_EXECUTION_SPACES)
# Every space the areas are built for, the default first.
set(KOTML_BUILT_EXECUTION_SPACES ${KOTML_DEFAULT_EXECUTION_SPACE} ${KOTML_EXTRA_EXECUTION_SPACES})

# The areas (src/CMakeLists.txt adds each as it is defined): their targets are
# the ones that exist once per execution space.
set_property(GLOBAL PROPERTY KOTML_AREAS "")

# <out>: "" for the default space, "_<space in lower case>" for another.
function(kotml_space_suffix out space)
  if(space STREQUAL KOTML_DEFAULT_EXECUTION_SPACE)
    set(${out} "" PARENT_SCOPE)
  else()
    string(TOLOWER "_${space}" _suffix)
    set(${out} "${_suffix}" PARENT_SCOPE)
  endif()
endfunction()

# <out>: the libraries <ARGN> with every kotml area (kotml::<area>) replaced by
# its build for <space>; other libraries are unchanged.
function(kotml_libraries_for_space out space)
  kotml_space_suffix(_suffix "${space}")
  get_property(_areas GLOBAL PROPERTY KOTML_AREAS)
  set(_mapped "")
  foreach(_library ${ARGN})
    if(_library MATCHES "^kotml::(.+)$" AND CMAKE_MATCH_1 IN_LIST _areas)
      list(APPEND _mapped kotml::${CMAKE_MATCH_1}${_suffix})
    else()
      list(APPEND _mapped ${_library})
    endif()
  endforeach()
  set(${out} "${_mapped}" PARENT_SCOPE)
endfunction()

# Compile definitions a target built for <space> carries (PUBLIC), so that the
# library and everything compiled against it agree on kotml::ExecSpace.
function(kotml_target_execution_space target space)
  kotml_space_suffix(_suffix "${space}")
  if(_suffix)
    get_target_property(_type ${target} TYPE)
    if(_type STREQUAL "INTERFACE_LIBRARY")
      target_compile_definitions(${target} INTERFACE KOTML_EXECUTION_SPACE=Kokkos::${space})
    else()
      target_compile_definitions(${target} PUBLIC KOTML_EXECUTION_SPACE=Kokkos::${space})
    endif()
  endif()
endfunction()
