# Version and provenance baked into the binary: `kotml --version` and every
# results file carry them, so a run can be traced to the code that made it.
find_package(Git QUIET)
# The commit is looked up at build time, not here (see KotmlGitHash.cmake); the
# configure summary shows the commit the tree was configured at.
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
set(KOTML_GIT_HASH_SOURCE ${PROJECT_BINARY_DIR}/generated/git_hash.cpp)
set(_git_hash_command ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
    -DGIT_EXECUTABLE=${GIT_EXECUTABLE} -DOUTPUT=${KOTML_GIT_HASH_SOURCE}
    -P ${PROJECT_SOURCE_DIR}/cmake/KotmlGitHash.cmake)
execute_process(COMMAND ${_git_hash_command})
add_custom_target(kotml_git_hash ALL COMMAND ${_git_hash_command} BYPRODUCTS ${KOTML_GIT_HASH_SOURCE}
                  COMMENT "kotml: commit of the source tree" VERBATIM)
string(REPLACE ";" "," KOTML_KOKKOS_BACKENDS_STRING "${KOTML_KOKKOS_BACKENDS}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/version.hpp.in
               ${PROJECT_BINARY_DIR}/generated/kotml/core/version.hpp @ONLY)
