# mtc_add_engine_plugin(TARGET ENGINE_TARGET ENGINE_SOURCE_DIR): builds TARGET, a loadable
# library (src/engine_plugin/mtc_engine_plugin.h) wrapping ENGINE_TARGET, the mtc::copier of the
# tree at ENGINE_SOURCE_DIR, whose git revision it reports. Only the entry point is exported
# (engine_plugin.map): every other symbol, the engine's singletons and the inline statics of the
# headers included, stays inside the library, so two builds loaded into one process share
# neither code nor state.
set(_MTC_PLUGIN_DIR "${CMAKE_CURRENT_LIST_DIR}/../src/engine_plugin")
set(_MTC_REVISION_SCRIPT "${CMAKE_CURRENT_LIST_DIR}/MtcGitRevision.cmake")
include("${CMAKE_CURRENT_LIST_DIR}/MtcSharedLibstdcxx.cmake")

function(mtc_add_engine_plugin target engine_target engine_source_dir)
  add_library(${target} MODULE "${_MTC_PLUGIN_DIR}/engine_plugin.cpp")
  # The engine's revision, read at every build (see MtcGitRevision.cmake).
  find_package(Git QUIET)
  set(generated "${CMAKE_CURRENT_BINARY_DIR}/${target}_generated")
  set(command "${CMAKE_COMMAND}" "-DSOURCE_DIR=${engine_source_dir}" "-DOUTPUT=${generated}/mtc_engine_revision.h"
      "-DGIT_EXECUTABLE=${GIT_EXECUTABLE}" "-DPROJECT_DIR=${PROJECT_SOURCE_DIR}" -P "${_MTC_REVISION_SCRIPT}")
  execute_process(COMMAND ${command})
  add_custom_target(${target}_revision COMMAND ${command} BYPRODUCTS "${generated}/mtc_engine_revision.h" VERBATIM)
  add_dependencies(${target} ${target}_revision)
  target_include_directories(${target} PRIVATE "${_MTC_PLUGIN_DIR}" "${generated}")
  target_link_libraries(${target} PRIVATE ${engine_target} torch)
  set_target_properties(${target} PROPERTIES PREFIX "lib" CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON
                                             LINK_DEPENDS "${_MTC_PLUGIN_DIR}/engine_plugin.map")
  # No --no-undefined: under a sanitizer the library leaves the runtime's symbols to the program.
  target_link_options(${target} PRIVATE "LINKER:--version-script=${_MTC_PLUGIN_DIR}/engine_plugin.map")
  # Loaded into mtc-bench: the program's C++ runtime, not a copy of its own.
  mtc_link_shared_libstdcxx(${target})
endfunction()
