# TILEJIT_BUILD_ID: what the JIT's cache keys and `tilejit --version` name the
# build by. The build id is taken at configure time: the sources' commit and, for a dirty
# tree, a hash of the uncommitted changes (reconfigure after editing to change it).
find_package(Git QUIET)
set(TILEJIT_BUILD_ID "unknown")
if(GIT_FOUND)
  execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse HEAD
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} OUTPUT_VARIABLE _commit
    OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc ERROR_QUIET)
  if(_rc EQUAL 0)
    set(TILEJIT_BUILD_ID "${_commit}")
    execute_process(COMMAND ${GIT_EXECUTABLE} diff HEAD -- support compiler runtime jit tuning models
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} OUTPUT_VARIABLE _diff ERROR_QUIET)
    if(NOT _diff STREQUAL "")
      string(SHA256 _diffHash "${_diff}")
      string(SUBSTRING "${_diffHash}" 0 16 _diffHash)
      set(TILEJIT_BUILD_ID "${TILEJIT_BUILD_ID}-dirty-${_diffHash}")
    endif()
  endif()
endif()
message(STATUS "tilejit build id: ${TILEJIT_BUILD_ID}")
