# Installs the gradlab build tree into a scratch prefix, then configures, builds and runs
# checks/install/consumer against it with find_package(gradlab CONFIG REQUIRED).
# Inputs (-D): GRADLAB_BUILD_DIR WORK_DIR CONSUMER_SOURCE_DIR GENERATOR MAKE_PROGRAM
#              CXX_COMPILER BUILD_TYPE MULTI_CONFIG EXTRA_CXX_FLAGS
cmake_minimum_required(VERSION 3.25)

foreach(_var GRADLAB_BUILD_DIR WORK_DIR CONSUMER_SOURCE_DIR GENERATOR BUILD_TYPE)
  if(NOT DEFINED ${_var} OR "${${_var}}" STREQUAL "")
    message(FATAL_ERROR "run_install_test.cmake: -D${_var}=... is required")
  endif()
endforeach()

set(_prefix "${WORK_DIR}/prefix")
set(_build "${WORK_DIR}/consumer-build")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

function(run_step name)
  message(STATUS "install_consumer: ${name}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE _rc COMMAND_ECHO STDOUT)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "install_consumer: step '${name}' failed (${_rc})")
  endif()
endfunction()

run_step(install "${CMAKE_COMMAND}" --install "${GRADLAB_BUILD_DIR}"
         --config "${BUILD_TYPE}" --prefix "${_prefix}")

if(NOT EXISTS "${_prefix}/include/gradlab/gradlab.hpp")
  message(FATAL_ERROR "install_consumer: ${_prefix}/include/gradlab/gradlab.hpp not installed")
endif()

# The LibTorch port path: include/gradlab/compat/torch/*.h (consumer: torch_consumer.cpp).
foreach(_h torch types data nn optim script data/datasets/base)
  if(NOT EXISTS "${_prefix}/include/gradlab/compat/torch/${_h}.h")
    message(FATAL_ERROR "install_consumer: include/gradlab/compat/torch/${_h}.h not installed")
  endif()
endforeach()

# The diagnose helpers say they are not installed; the digits data is (share/gradlab/data).
if(EXISTS "${_prefix}/include/gradlab/diagnose/internal.hpp")
  message(FATAL_ERROR "install_consumer: gradlab/diagnose/internal.hpp, an internal header, was installed")
endif()
if(NOT EXISTS "${_prefix}/share/gradlab/data/digits/digits.csv.gz")
  message(FATAL_ERROR "install_consumer: share/gradlab/data/digits/digits.csv.gz not installed")
endif()

set(_configure "${CMAKE_COMMAND}" -S "${CONSUMER_SOURCE_DIR}" -B "${_build}"
    -G "${GENERATOR}" "-DCMAKE_PREFIX_PATH=${_prefix}")
if(MAKE_PROGRAM)
  list(APPEND _configure "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
if(CXX_COMPILER)
  list(APPEND _configure "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}")
endif()
if(NOT MULTI_CONFIG)
  list(APPEND _configure "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}")
endif()
if(EXTRA_CXX_FLAGS)
  list(APPEND _configure "-DCMAKE_CXX_FLAGS=${EXTRA_CXX_FLAGS}"
       "-DCMAKE_EXE_LINKER_FLAGS=${EXTRA_CXX_FLAGS}")
endif()
run_step(configure ${_configure})
run_step(build "${CMAKE_COMMAND}" --build "${_build}" --config "${BUILD_TYPE}")

if(MULTI_CONFIG)
  set(_exe "${_build}/${BUILD_TYPE}/gradlab_consumer")
else()
  set(_exe "${_build}/gradlab_consumer")
endif()
# Without GRADLAB_DATA_DIR and with no ./data around, load_digits_split() finds the installed data.
file(MAKE_DIRECTORY "${WORK_DIR}/elsewhere")
message(STATUS "install_consumer: run (in ${WORK_DIR}/elsewhere, GRADLAB_DATA_DIR unset)")
execute_process(COMMAND "${CMAKE_COMMAND}" -E env --unset=GRADLAB_DATA_DIR "${_exe}"
                WORKING_DIRECTORY "${WORK_DIR}/elsewhere" RESULT_VARIABLE _rc OUTPUT_VARIABLE _out)
message(STATUS "${_out}")
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "install_consumer: step 'run' failed (${_rc})")
endif()
file(REAL_PATH "${_prefix}/share/gradlab/data" _data)
string(FIND "${_out}" "data_dir: ${_data}" _at)
if(_at EQUAL -1)
  message(FATAL_ERROR "install_consumer: the consumer did not read the installed data ${_data}")
endif()

# The LibTorch-style program, built through gradlab::torch_compat (include/gradlab/compat).
if(MULTI_CONFIG)
  set(_torch_exe "${_build}/${BUILD_TYPE}/gradlab_torch_consumer")
else()
  set(_torch_exe "${_build}/gradlab_torch_consumer")
endif()
execute_process(COMMAND "${_torch_exe}" RESULT_VARIABLE _rc OUTPUT_VARIABLE _out)
message(STATUS "${_out}")
if(NOT _rc EQUAL 0 OR NOT _out MATCHES "compat: OK")
  message(FATAL_ERROR "install_consumer: step 'run torch_consumer' failed (${_rc})")
endif()
