# ctest cxx17_headers_<compiler>: compiles checks/cxx17/cxx17_headers.cpp as C++17 with one
# compiler (warnings are errors), links it against the C++20-built libgradlab, and runs it.
# -D: COMPILER, SOURCE, INCLUDE_DIR, LIBRARY (libgradlab.so), WORK_DIR, EXTRA_FLAGS (optional),
#     PRELOAD (optional: a sanitizer runtime to LD_PRELOAD when the program runs).
foreach(_v COMPILER SOURCE INCLUDE_DIR LIBRARY WORK_DIR)
  if(NOT DEFINED ${_v})
    message(FATAL_ERROR "run_cxx17.cmake: -D${_v}=... is required")
  endif()
endforeach()
file(MAKE_DIRECTORY "${WORK_DIR}")
get_filename_component(_libdir "${LIBRARY}" DIRECTORY)
separate_arguments(_extra UNIX_COMMAND "${EXTRA_FLAGS}")
set(_exe "${WORK_DIR}/cxx17_headers")
file(REMOVE "${_exe}")
execute_process(
  COMMAND "${COMPILER}" -std=c++17 -Wall -Wextra -Wpedantic -Werror -O1 ${_extra}
          -I "${INCLUDE_DIR}" "${SOURCE}" -o "${_exe}" "${LIBRARY}" "-Wl,-rpath,${_libdir}" -pthread
  RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "cxx17: ${COMPILER} -std=c++17 could not compile ${SOURCE} with gradlab.hpp "
                      "(exit ${_rc}); every header gradlab.hpp includes must parse as C++17 "
                      "without warnings: no concepts / requires, <=>, designated initializers, "
                      "std::span, [[likely]] (use GRADLAB_LIKELY), std::source_location (use Site)")
endif()
if(PRELOAD)
  execute_process(COMMAND "${CMAKE_COMMAND}" -E env "LD_PRELOAD=${PRELOAD}" "${_exe}" RESULT_VARIABLE _rc)
else()
  execute_process(COMMAND "${_exe}" RESULT_VARIABLE _rc)
endif()
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "cxx17: the C++17 program built by ${COMPILER} failed (exit ${_rc})")
endif()
