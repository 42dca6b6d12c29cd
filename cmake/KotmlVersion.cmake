# Version and provenance baked into the binary: `kotml --version` and every
# results file carry them, so a run can be traced to the code that made it.
find_package(Git QUIET)
set(KOTML_GIT_HASH "unknown")
if(GIT_FOUND AND EXISTS "${PROJECT_SOURCE_DIR}/.git")
  execute_process(
    COMMAND "${GIT_EXECUTABLE}" -C "${PROJECT_SOURCE_DIR}" rev-parse --short=12 HEAD
    OUTPUT_VARIABLE KOTML_GIT_HASH OUTPUT_STRIP_TRAILING_WHITESPACE
    ERROR_QUIET RESULT_VARIABLE _git_result)
  if(NOT _git_result EQUAL 0 OR NOT KOTML_GIT_HASH)
    set(KOTML_GIT_HASH "unknown")
  endif()
endif()
string(REPLACE ";" "," KOTML_KOKKOS_BACKENDS_STRING "${KOTML_KOKKOS_BACKENDS}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/version.hpp.in
               ${PROJECT_BINARY_DIR}/generated/kotml/core/version.hpp @ONLY)
