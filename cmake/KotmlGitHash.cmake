# Run at every build (cmake -P, from the kotml_git_hash target): writes OUTPUT, a
# source file that defines kotml::git_hash, with the commit of SOURCE_DIR and
# "-dirty" when tracked files differ from it. The file is replaced only when the
# text changes, so a build after a commit recompiles this one file and relinks;
# a hash taken at configure time would go stale with the next commit and
# mislabel every results file written after it.
set(_hash "unknown")
if(GIT_EXECUTABLE AND EXISTS "${SOURCE_DIR}/.git")
  execute_process(
    COMMAND "${GIT_EXECUTABLE}" -C "${SOURCE_DIR}" rev-parse --short=12 HEAD
    OUTPUT_VARIABLE _head OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _head_result)
  if(_head_result EQUAL 0 AND _head)
    set(_hash "${_head}")
    execute_process(
      COMMAND "${GIT_EXECUTABLE}" -C "${SOURCE_DIR}" diff --quiet HEAD --
      RESULT_VARIABLE _dirty OUTPUT_QUIET ERROR_QUIET)
    if(_dirty EQUAL 1)
      string(APPEND _hash "-dirty")
    endif()
  endif()
endif()
set(_text "// Generated at build time by cmake/KotmlGitHash.cmake; do not edit.
#include \"kotml/core/version.hpp\"

namespace kotml {
const char* const git_hash = \"${_hash}\";
}  // namespace kotml
")
set(_current "")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" _current)
endif()
if(NOT _current STREQUAL _text)
  file(WRITE "${OUTPUT}" "${_text}")
endif()
