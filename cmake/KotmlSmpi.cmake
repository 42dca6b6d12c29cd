# Build kotml against SimGrid's SMPI instead of a real MPI (the `smpi` preset).
#
# The preset sets CMAKE_C_COMPILER=smpicc and CMAKE_CXX_COMPILER=smpicxx and
# names this file as CMAKE_PROJECT_kotml_INCLUDE, so it runs right after
# project() and no other build sees it. With the SMPI wrappers as compilers:
#  * FindMPI notices that the compilers build MPI programs without flags and
#    makes MPI::MPI_C an empty target; src/ links it as for Open MPI;
#  * smpicxx force-includes smpi/smpi_helpers.h into every file, and links every
#    program with -shared against libsimgrid: `kotml` is a shared object that
#    smpirun loads once per simulated rank (it cannot run on its own);
#  * -DSMPI_NO_OVERRIDE_MALLOC (in the preset's flags) keeps smpi_helpers.h's
#    malloc/calloc/realloc/free macros out of Kokkos' headers, which they break.
if(NOT CMAKE_CXX_COMPILER MATCHES "smpicxx")
  message(FATAL_ERROR "KotmlSmpi.cmake is for the smpi preset: CMAKE_CXX_COMPILER must be smpicxx "
    "(it is ${CMAKE_CXX_COMPILER})")
endif()
set(KOTML_SMPI ON)
# include/kotml/core/simulation.hpp: sampled compute blocks and folded buffers
# exist in this build only (perf/scaling/smpi/smpi_sampling.cpp).
add_compile_definitions(KOTML_SMPI)

# The configure-time Kokkos View probe runs its program: smpicxx makes a shared
# object of it, which cannot run outside smpirun.
set(KOTML_SKIP_KOKKOS_VIEW_PROBE ON CACHE BOOL "smpicxx builds shared objects that only smpirun can run" FORCE)

find_program(KOTML_SMPIRUN smpirun REQUIRED)
set(MPIEXEC_EXECUTABLE "${KOTML_SMPIRUN}" CACHE FILEPATH "SMPI's launcher" FORCE)

# kotml's phase timers (core/phase_timers.cpp) and progress lines read
# std::chrono::steady_clock, which libstdc++ implements with clock_gettime inside
# libstdc++.so, where smpi_helpers.h's clock_gettime macro cannot reach: they
# would read the host's clock while the ranks take turns on it. The linker
# redirects the calls that kotml's own code makes to that function (--wrap;
# libstdc++ and the Kokkos libraries keep the real one) to
# perf/scaling/smpi/smpi_clock.cpp, which answers with SMPI's simulated clock.
# Kokkos::Timer (std::chrono::system_clock, the epoch times) gets the same.
set(_kotml_smpi_wrapped
  _ZNSt6chrono3_V212steady_clock3nowEv
  _ZNSt6chrono3_V212system_clock3nowEv)
function(_kotml_smpi_attach_clock)
  if(NOT TARGET kotml)
    message(FATAL_ERROR "KotmlSmpi.cmake: no target kotml to attach the simulated clock to")
  endif()
  target_sources(kotml PRIVATE ${PROJECT_SOURCE_DIR}/perf/scaling/smpi/smpi_clock.cpp
                               ${PROJECT_SOURCE_DIR}/perf/scaling/smpi/smpi_sampling.cpp)
  foreach(_symbol ${_kotml_smpi_wrapped})
    target_link_options(kotml PRIVATE "LINKER:--wrap=${_symbol}")
  endforeach()
  message(STATUS "  SMPI            : kotml is an SMPI shared object; steady_clock and system_clock read the simulated clock")

  # `ctest --preset smpi`: kotml's GoogleTest suite is off here (its binaries would be SMPI
  # shared objects too); one smoke test trains on the built-in cohort on 4 simulated ranks of
  # the InfiniBand platform through perf/scaling/smpi_run.sh, privatisation included.
  set(_smoke "${CMAKE_BINARY_DIR}/smpi_smoke")
  add_test(NAME smpi_train_toy2d_4_ranks
    COMMAND sh -c "rm -rf '${_smoke}' && exec '${PROJECT_SOURCE_DIR}/perf/scaling/smpi_run.sh' --ranks 4 --platform '${PROJECT_SOURCE_DIR}/perf/scaling/platforms/fat_tree_ib_hdr100_1152.xml' --host-speed 1Gf --kotml '$<TARGET_FILE:kotml>' --json '${_smoke}.json' --log /dev/stderr -- train --builtin toy2d --n-cells 50 --epochs 2 --out '${_smoke}'")
  set_tests_properties(smpi_train_toy2d_4_ranks PROPERTIES
    PASS_REGULAR_EXPRESSION "kotml train: time per phase over 4 rank"
    FAIL_REGULAR_EXPRESSION "CRITICAL|Aborted|Execution failed"
    TIMEOUT 300)

  # Sampled iterations and folded buffers (include/kotml/core/simulation.hpp): the replayed
  # iterations of a map on 4 ranks must repeat the recorded one exactly.
  add_test(NAME smpi_map_sampled_replay_4_ranks
    COMMAND "${PROJECT_SOURCE_DIR}/perf/scaling/smpi/test_map_replay.sh" "$<TARGET_FILE:kotml>" "${PROJECT_SOURCE_DIR}"
            "${CMAKE_BINARY_DIR}/smpi_map")
  set_tests_properties(smpi_map_sampled_replay_4_ranks PROPERTIES
    FAIL_REGULAR_EXPRESSION "CRITICAL|Aborted|Execution failed"
    TIMEOUT 300)

  # Folded buffers of a map, with plain buffers placed where freed folded ones were: the same tables.
  add_test(NAME smpi_map_folded_8_ranks
    COMMAND "${PROJECT_SOURCE_DIR}/perf/scaling/smpi/test_map_folded.sh" "$<TARGET_FILE:kotml>" "${PROJECT_SOURCE_DIR}"
            "${CMAKE_BINARY_DIR}/smpi_map_folded")
  set_tests_properties(smpi_map_folded_8_ranks PROPERTIES
    FAIL_REGULAR_EXPRESSION "CRITICAL|Aborted|Execution failed|FAIL"
    TIMEOUT 300)

  # Folded points, neighbours and graph of apsp: the same lengths as without folding.
  add_test(NAME smpi_apsp_folded_4_ranks
    COMMAND "${PROJECT_SOURCE_DIR}/perf/scaling/smpi/test_apsp_folded.sh" "$<TARGET_FILE:kotml>" "${PROJECT_SOURCE_DIR}"
            "${CMAKE_BINARY_DIR}/smpi_apsp")
  set_tests_properties(smpi_apsp_folded_4_ranks PROPERTIES
    FAIL_REGULAR_EXPRESSION "CRITICAL|Aborted|Execution failed|FAIL"
    TIMEOUT 300)

  # Folded strips and slot limbs of the joint pass over recomputed costs: the same potentials.
  add_test(NAME smpi_ot_online_folded_4_ranks
    COMMAND "${PROJECT_SOURCE_DIR}/perf/scaling/smpi/test_ot_folded.sh" "$<TARGET_FILE:kotml>" "${PROJECT_SOURCE_DIR}"
            "${CMAKE_BINARY_DIR}/smpi_ot")
  set_tests_properties(smpi_ot_online_folded_4_ranks PROPERTIES
    FAIL_REGULAR_EXPRESSION "CRITICAL|Aborted|Execution failed|FAIL"
    TIMEOUT 300)

  # Folded graphs, landmark embeddings and gathered target anchor distances of gw: the same plan.
  add_test(NAME smpi_gw_landmark_folded_4_ranks
    COMMAND "${PROJECT_SOURCE_DIR}/perf/scaling/smpi/test_gw_folded.sh" "$<TARGET_FILE:kotml>" "${PROJECT_SOURCE_DIR}"
            "${CMAKE_BINARY_DIR}/smpi_gw")
  set_tests_properties(smpi_gw_landmark_folded_4_ranks PROPERTIES
    FAIL_REGULAR_EXPRESSION "CRITICAL|Aborted|Execution failed|FAIL"
    TIMEOUT 300)
endfunction()
enable_testing()  # for the smoke test added below, at the end of the top-level CMakeLists.txt
cmake_language(DEFER DIRECTORY ${PROJECT_SOURCE_DIR} CALL _kotml_smpi_attach_clock)
