# ---- cxx17_headers_*: gradlab.hpp parses as C++17 (xeus-cling reads it so) and links ------------
# One test per compiler found; each compiles at test time, so a header that stops being C++17
# fails a test instead of the build. g++ is the project's compiler; the clangs are optional.
set(_cxx17_compilers "gcc=${CMAKE_CXX_COMPILER}")
find_program(GRADLAB_CLANGXX19 clang++-19)
find_program(GRADLAB_CLANGXX14 clang++-14)
if(GRADLAB_CLANGXX19)
  list(APPEND _cxx17_compilers "clang19=${GRADLAB_CLANGXX19}")
else()
  message(STATUS "gradlab: no clang++-19: cxx17_headers_clang19 is not registered")
endif()
if(GRADLAB_CLANGXX14)
  list(APPEND _cxx17_compilers "clang14=${GRADLAB_CLANGXX14}")
endif()
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  list(REMOVE_AT _cxx17_compilers 0)  # the project compiler is clang: the list has it already
endif()
set(_cxx17_sanitize_flags "")
set(_cxx17_runtime "")
if(GRADLAB_SANITIZE OR GRADLAB_SANITIZE_THREAD)
  list(JOIN GRADLAB_SANITIZE_FLAGS " " _cxx17_sanitize_flags)
  # Another compiler's -fsanitize links its own runtime, which cannot share a process with the one
  # libgradlab.so was built with ("incompatible ASan runtimes"): such a program is built without
  # sanitizer flags and runs with the project compiler's runtime preloaded (it must come first).
  if(GRADLAB_SANITIZE)
    set(_runtime_name libasan.so)
  else()
    set(_runtime_name libtsan.so)
  endif()
  execute_process(COMMAND "${CMAKE_CXX_COMPILER}" -print-file-name=${_runtime_name}
                  OUTPUT_VARIABLE _cxx17_runtime OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
endif()
foreach(_entry IN LISTS _cxx17_compilers)
  string(REGEX MATCH "^([^=]+)=(.*)$" _m "${_entry}")
  set(_name "${CMAKE_MATCH_1}")
  set(_cxx17_flags "${_cxx17_sanitize_flags}")
  set(_cxx17_preload "")
  if(_cxx17_sanitize_flags AND NOT "${CMAKE_MATCH_2}" STREQUAL "${CMAKE_CXX_COMPILER}")
    set(_cxx17_flags "")
    set(_cxx17_preload "${_cxx17_runtime}")
  endif()
  add_test(NAME cxx17_headers_${_name}
    COMMAND "${CMAKE_COMMAND}"
      "-DCOMPILER=${CMAKE_MATCH_2}"
      "-DSOURCE=${CMAKE_CURRENT_SOURCE_DIR}/cxx17/cxx17_headers.cpp"
      "-DINCLUDE_DIR=${PROJECT_SOURCE_DIR}/src"
      "-DLIBRARY=$<TARGET_FILE:gradlab>"
      "-DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/cxx17_${_name}"
      "-DEXTRA_FLAGS=${_cxx17_flags}"
      "-DPRELOAD=${_cxx17_preload}"
      -P "${CMAKE_CURRENT_SOURCE_DIR}/cxx17/run_cxx17.cmake")
  set_tests_properties(cxx17_headers_${_name} PROPERTIES LABELS unit TIMEOUT 180
    PASS_REGULAR_EXPRESSION "cxx17 headers: OK")
endforeach()
