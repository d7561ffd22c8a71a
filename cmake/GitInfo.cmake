# The commit the binaries were built from, stamped into every results file.
execute_process(COMMAND git rev-parse --short=12 HEAD
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR} OUTPUT_VARIABLE GPUACCEPT_GIT_COMMIT
  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _git_rc)
if(NOT _git_rc EQUAL 0 OR GPUACCEPT_GIT_COMMIT STREQUAL "")
  set(GPUACCEPT_GIT_COMMIT "unknown")
endif()
execute_process(COMMAND git status --porcelain --untracked-files=no
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR} OUTPUT_VARIABLE _dirty ERROR_QUIET)
if(NOT _dirty STREQUAL "")
  string(APPEND GPUACCEPT_GIT_COMMIT "-dirty")
endif()
