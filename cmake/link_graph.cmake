# ehprof_write_link_graph(OUT dir...): writes, at generate time, every
# library target defined under the dirs (and their subdirectories) with what
# it links, one line each:
#   name|TYPE|LINK_LIBRARIES, comma-separated|INTERFACE_LINK_LIBRARIES, same
# scripts/check_libbpf_confined.py follows it to each library's link
# closure, so a check of what links libbpf reads a file instead of
# reconfiguring (cmake --graphviz) the build.
function(_ehprof_collect_libraries dir out)
  set(found "")
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(t IN LISTS targets)
    get_target_property(type ${t} TYPE)
    if(type MATCHES "_LIBRARY$")
      list(APPEND found ${t})
    endif()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(d IN LISTS subdirs)
    _ehprof_collect_libraries(${d} sub)
    list(APPEND found ${sub})
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

function(ehprof_write_link_graph out)
  set(lines "")
  foreach(dir IN LISTS ARGN)
    _ehprof_collect_libraries(${dir} libs)
    foreach(t IN LISTS libs)
      get_target_property(type ${t} TYPE)
      set(link "")
      if(NOT type STREQUAL "INTERFACE_LIBRARY")
        set(link "$<JOIN:$<TARGET_PROPERTY:${t},LINK_LIBRARIES>,$<COMMA>>")
      endif()
      string(APPEND lines
        "${t}|${type}|${link}|$<JOIN:$<TARGET_PROPERTY:${t},INTERFACE_LINK_LIBRARIES>,$<COMMA>>\n")
    endforeach()
  endforeach()
  file(GENERATE OUTPUT ${out} CONTENT "${lines}")
endfunction()
