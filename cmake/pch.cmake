# EHPROF_PCH: precompiled headers for every C++ target of the build
# (cmake/pch.h: the standard and Abseil headers most files include, and CLI11
# for the command line's files), so a build from nothing parses them once a
# target instead of once a file. scripts/demo.sh turns it on: a newcomer's
# first build is all compile and no ccache (about half its time was spent
# parsing these headers). Off by default: ccache does not reuse compiles
# against a precompiled header without extra sloppiness, and a build without
# it keeps each file's own includes honest.
option(EHPROF_PCH "Precompiled headers (cmake/pch.h) for a faster build from nothing" OFF)

function(ehprof_pch_targets dir)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(t IN LISTS targets)
    get_target_property(type ${t} TYPE)
    get_target_property(sources ${t} SOURCES)
    list(FILTER sources INCLUDE REGEX "\\.cc$")
    list(LENGTH sources n)
    # (a target of one file, such as ehprof's main.cc, gains nothing)
    if(n GREATER 1 AND type MATCHES "^(STATIC_LIBRARY|SHARED_LIBRARY|EXECUTABLE)$")
      target_precompile_headers(${t} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:${CMAKE_SOURCE_DIR}/cmake/pch.h>")
    endif()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(d IN LISTS subdirs)
    ehprof_pch_targets(${d})
  endforeach()
endfunction()

if(EHPROF_PCH)
  ehprof_pch_targets(${CMAKE_SOURCE_DIR})
  target_precompile_headers(agent_cli PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:CLI/CLI.hpp>")
endif()
