# Script mode (cmake -DSOURCE_DIR=... -DOUTPUT=... [-DGIT_EXECUTABLE=...] [-DPROJECT_DIR=...]
# -P MtcGitRevision.cmake):
# writes OUTPUT, a header defining MTC_GIT_REVISION for the report's tool block. It is the short
# commit of SOURCE_DIR's HEAD, with "-dirty" when tracked files differ from that commit (a report
# measured on uncommitted changes must not pass for the commit), or "unknown" when SOURCE_DIR is
# not the top of a git work tree: a copy vendored inside another repository (or a monorepo
# checkout) must not report that repository's revision.
# It runs at every build, not at configure time: `cmake --build` after a pull or a commit does not
# configure again, and would keep naming the old revision. OUTPUT is rewritten only when its text
# changes, so an unchanged revision recompiles nothing.
# A copy of the tree whose .git is not its history (a GPU host given the working tree and an old
# .git) would name that old commit: the environment variable MTC_REVISION, when set at build time
# (letters, digits and . _ + -, at most 64), is taken as the revision of PROJECT_DIR (the tree being
# built) instead. Another SOURCE_DIR (an A/B's candidate engine) keeps its own git's answer.
if(NOT GIT_EXECUTABLE)
  find_program(GIT_EXECUTABLE git)
endif()
set(revision "unknown")
set(declared "$ENV{MTC_REVISION}")
file(REAL_PATH "${SOURCE_DIR}" source_dir)
set(own_tree OFF)
if(PROJECT_DIR)
  file(REAL_PATH "${PROJECT_DIR}" project_dir)
  if(project_dir STREQUAL source_dir)
    set(own_tree ON)
  endif()
endif()
if(own_tree AND NOT declared STREQUAL "")
  string(LENGTH "${declared}" declared_length)
  if(declared MATCHES "^[0-9A-Za-z._+-]+$" AND declared_length LESS_EQUAL 64)
    set(revision "${declared}")
  else()
    message(WARNING "MTC_REVISION='${declared}' ignored: letters, digits and . _ + - only, at most 64")
    set(declared "")
  endif()
endif()
if(GIT_EXECUTABLE AND (NOT own_tree OR declared STREQUAL ""))
  execute_process(COMMAND "${GIT_EXECUTABLE}" rev-parse --show-toplevel
                  WORKING_DIRECTORY "${SOURCE_DIR}"
                  OUTPUT_VARIABLE top OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE top_result ERROR_QUIET)
  if(top_result EQUAL 0)
    file(REAL_PATH "${top}" top)
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
