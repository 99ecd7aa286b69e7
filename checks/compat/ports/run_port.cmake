# Runs one port program and compares its output with the recorded LibTorch output.
#   cmake -DPROGRAM=<exe> -DOUT=<file> -DREF=<file> -DCOMPARE=<port_compare> -DWORKDIR=<dir>
#         [-DLAUNCHER="mpiexec -n 2"] [-DRECORD=ON] -P run_port.cmake
# LAUNCHER is one string, split at spaces (a launcher that starts the ranks of a distributed
# program).
# RECORD=ON writes the output over REF instead of comparing (the LibTorch build's record step).
file(REMOVE_RECURSE "${WORKDIR}")
file(MAKE_DIRECTORY "${WORKDIR}")
separate_arguments(launcher UNIX_COMMAND "${LAUNCHER}")
execute_process(COMMAND ${launcher} "${PROGRAM}" WORKING_DIRECTORY "${WORKDIR}"
                OUTPUT_FILE "${OUT}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(READ "${OUT}" text)
  message(FATAL_ERROR "${PROGRAM} failed (${rc}); its output:\n${text}")
endif()
if(RECORD)
  file(COPY_FILE "${OUT}" "${REF}")
  message(STATUS "recorded ${REF}")
  return()
endif()
execute_process(COMMAND "${COMPARE}" "${OUT}" "${REF}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PROGRAM}: its output differs from ${REF}")
endif()
