# mtc_link_shared_libstdcxx(TARGET): TARGET, a library loaded into another program (the Python
# module, the engine plugin), takes the C++ runtime from the shared libstdc++.so.6, the one the
# program and torch's libraries already use, never a static copy of its own.
#
# Why: a toolchain that ships libstdc++.a alone (the GPU host's /opt/gcc, which its CXX names)
# answers `-lstdc++` with the archive, and the linker copies the parts of the runtime the
# library uses into it. Such a copy inside a module that Python loads crashed the interpreter
# (SIGSEGV in std::ostream::_M_insert<long>, formatting an engine error's integer; the stack in
# results/NOTES.md). Naming the file (-l:libstdc++.so.6) finds the system's shared runtime on
# the default search path, and, linked first and kept (--no-as-needed), it defines every runtime
# symbol, so the driver's own -lstdc++ at the end of the line pulls nothing from an archive.
# With the shared libstdc++ listed before torch's libraries, the library's symbols also bind to
# it rather than to the copies of a few runtime functions that torch's wheels export.
function(mtc_link_shared_libstdcxx target)
  if(NOT CMAKE_SYSTEM_NAME STREQUAL "Linux" OR NOT CMAKE_CXX_COMPILER_ID MATCHES "^(GNU|Clang)$"
     OR CMAKE_CXX_FLAGS MATCHES "-stdlib=libc\\+\\+")
    return()
  endif()
  target_link_options(${target} PRIVATE "LINKER:--push-state,--no-as-needed" "LINKER:-l:libstdc++.so.6"
                                        "LINKER:--pop-state")
endfunction()
