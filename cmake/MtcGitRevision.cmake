# Script mode (cmake -DSOURCE_DIR=... -DOUTPUT=... [-DGIT_EXECUTABLE=...] -P MtcGitRevision.cmake):
# writes OUTPUT, a header defining MTC_GIT_REVISION for the report's tool block. It is the short
# commit of SOURCE_DIR's HEAD, with "-dirty" when tracked files differ from that commit (a report
# measured on uncommitted changes must not pass for the commit), or "unknown" when SOURCE_DIR is
# not the top of a git work tree: a copy vendored inside another repository (or a monorepo
# checkout) must not report that repository's revision.
# It runs at every build, not at configure time: `cmake --build` after a pull or a commit does not
# configure again, and would keep naming the old revision. OUTPUT is rewritten only when its text
# changes, so an unchanged revision recompiles nothing.
if(NOT GIT_EXECUTABLE)
  find_program(GIT_EXECUTABLE git)
endif()
set(revision "unknown")
if(GIT_EXECUTABLE)
  execute_process(COMMAND "${GIT_EXECUTABLE}" rev-parse --show-toplevel
                  WORKING_DIRECTORY "${SOURCE_DIR}"
                  OUTPUT_VARIABLE top OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE top_result ERROR_QUIET)
  if(top_result EQUAL 0)
    file(REAL_PATH "${top}" top)
    file(REAL_PATH "${SOURCE_DIR}" source_dir)
  endif()
  if(top_result EQUAL 0 AND top STREQUAL source_dir)
    execute_process(COMMAND "${GIT_EXECUTABLE}" rev-parse --short HEAD
                    WORKING_DIRECTORY "${SOURCE_DIR}"
                    OUTPUT_VARIABLE head OUTPUT_STRIP_TRAILING_WHITESPACE
                    RESULT_VARIABLE head_result ERROR_QUIET)
    if(head_result EQUAL 0 AND head)
      set(revision "${head}")
      execute_process(COMMAND "${GIT_EXECUTABLE}" status --porcelain --untracked-files=no
                      WORKING_DIRECTORY "${SOURCE_DIR}"
                      OUTPUT_VARIABLE changes RESULT_VARIABLE status_result ERROR_QUIET)
      if(status_result EQUAL 0 AND NOT changes STREQUAL "")
        string(APPEND revision "-dirty")
      endif()
    endif()
  endif()
endif()
set(text "// Written by cmake/MtcGitRevision.cmake at build time.\n#define MTC_GIT_REVISION \"${revision}\"\n")
set(old "")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUTPUT}" "${text}")
endif()
