# The installed public headers: exactly the list of docs/ARCHITECTURE.md ("The public
# headers and the package"), and each one compiles alone against the installed prefix only
# (so it reaches no internal header), with strict warnings, as a user's code would.
#   cmake -DBUILD_DIR=... -DPREFIX=... -DCXX=... -DDOC=... -P check_installed_headers.cmake
foreach(var BUILD_DIR PREFIX CXX DOC)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_installed_headers: -D${var}=... is required")
  endif()
endforeach()

file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${PREFIX}" --component headers
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install --component headers failed:\n${out}")
endif()

file(GLOB_RECURSE installed LIST_DIRECTORIES false RELATIVE "${PREFIX}/include" "${PREFIX}/include/*")
list(SORT installed)

# The documented list: every `flowrt/....h` in the first column of the section's table.
file(STRINGS "${DOC}" lines)
set(in_section FALSE)
set(documented "")
foreach(line IN LISTS lines)
  if(line MATCHES "^## ")
    if(line MATCHES "^## The public headers")
      set(in_section TRUE)
    else()
      set(in_section FALSE)
    endif()
  elseif(in_section AND line MATCHES "^\\| `(flowrt/[^`]+\\.h)` \\|")
    list(APPEND documented "${CMAKE_MATCH_1}")
  endif()
endforeach()
list(SORT documented)
if(NOT installed STREQUAL documented)
  set(extra ${installed})
  list(REMOVE_ITEM extra ${documented})
  set(missing ${documented})
  list(REMOVE_ITEM missing ${installed})
  message(FATAL_ERROR "installed headers differ from the list in ${DOC}\n"
                      "  installed, not listed: ${extra}\n  listed, not installed: ${missing}")
endif()

set(failed "")
foreach(header IN LISTS installed)
  set(tu "${PREFIX}/tu.cpp")
  file(WRITE "${tu}" "#include <${header}>\n")
  execute_process(COMMAND "${CXX}" -std=c++20 -fsyntax-only -Wall -Wextra -Wpedantic -Wshadow -Werror
                          -I "${PREFIX}/include" "${tu}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    string(APPEND failed "---- #include <${header}> ----\n${out}\n")
  endif()
endforeach()
if(failed)
  message(FATAL_ERROR "public headers that do not compile alone against the installed prefix:\n${failed}")
endif()
list(LENGTH installed n)
message(STATUS "${n} installed headers, each the documented set and self-contained")
