# The port corpus (issue 27): complete LibTorch programs in checks/compat/ports, each built twice
# from the same source: against gradlab through the compat header (<torch/torch.h> from
# src/compat), and, when LibTorch is found, against LibTorch 1.13. The LibTorch build's output is
# recorded in expected/<name>.txt (committed); both builds are compared with it by port_compare
# (tolerances: port_out.hpp). So the gradlab half checks values even where LibTorch is absent, and
# the LibTorch half checks that the recording is still LibTorch's.
# ddp runs under `mpiexec -n 2` (label mpi): gradlab's half through its c10d face over MPI, when
# gradlab has MPI; LibTorch's half over Gloo, when Gloo's headers (libgloo-dev) are there too.
#   cmake --build build/release --target record_ports     rewrites the recordings (LibTorch only)
set(GRADLAB_PORTS regression custom_function gradient_penalty custom_dataset finetune_frozen
  checkpoint vision_extras dcgan mnist_cnn lstm_classifier)
if(GRADLAB_HAVE_MPI)
  list(APPEND GRADLAB_PORTS ddp)
endif()
set(_ports_src "${CMAKE_CURRENT_SOURCE_DIR}/compat/ports")
set(_ports_bin "${CMAKE_CURRENT_BINARY_DIR}/ports")
add_executable(port_compare compat/ports/port_compare.cpp)
target_link_libraries(port_compare PRIVATE gradlab_warnings)
if(GRADLAB_HAVE_LIBTORCH)
  find_path(GRADLAB_GLOO_INCLUDE gloo/rendezvous/store.h)
endif()
# OpenMPI refuses root without these (CI and the dev containers run as root; see
# checks/distributed/extras.cmake); two ranks on two cores.
set(_port_mpi_env "OMPI_ALLOW_RUN_AS_ROOT=1" "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
  "OPENBLAS_NUM_THREADS=1" "OMPI_MCA_rmaps_base_oversubscribe=1" ${GRADLAB_MPI_TEST_ENV})
set(_record_commands)
foreach(_p IN LISTS GRADLAB_PORTS)
  set(_launch "")
  set(_labels unit)
  set(_env "")
  set(_with_libtorch ${GRADLAB_HAVE_LIBTORCH})
  if(_p STREQUAL "ddp")
    set(_launch "${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 --oversubscribe")
    set(_labels mpi)
    set(_env "${_port_mpi_env}")
    if(NOT GRADLAB_GLOO_INCLUDE)
      set(_with_libtorch OFF)
    endif()
  endif()
  add_executable(port_${_p} compat/ports/${_p}.cpp)
  target_include_directories(port_${_p} PRIVATE "${PROJECT_SOURCE_DIR}/src/compat")
  target_link_libraries(port_${_p} PRIVATE gradlab::gradlab gradlab_warnings)
  add_test(NAME compat.port.${_p}
    COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:port_${_p}> -DOUT=${_ports_bin}/${_p}.gradlab.txt
            -DREF=${_ports_src}/expected/${_p}.txt -DCOMPARE=$<TARGET_FILE:port_compare>
            -DWORKDIR=${_ports_bin}/${_p}.gradlab "-DLAUNCHER=${_launch}" -P ${_ports_src}/run_port.cmake)
  set_tests_properties(compat.port.${_p} PROPERTIES LABELS "${_labels}"
    PASS_REGULAR_EXPRESSION "same as LibTorch" ENVIRONMENT "${_env}")
  if(_with_libtorch)
    add_executable(port_${_p}_libtorch compat/ports/${_p}.cpp)
    target_link_libraries(port_${_p}_libtorch PRIVATE ${TORCH_LIBRARIES})
    target_compile_options(port_${_p}_libtorch PRIVATE ${GRADLAB_TORCH_FLAGS})
    add_test(NAME compat.port.${_p}.libtorch
      COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:port_${_p}_libtorch>
              -DOUT=${_ports_bin}/${_p}.libtorch.txt -DREF=${_ports_src}/expected/${_p}.txt
              -DCOMPARE=$<TARGET_FILE:port_compare> -DWORKDIR=${_ports_bin}/${_p}.libtorch
              "-DLAUNCHER=${_launch}" -P ${_ports_src}/run_port.cmake)
    set_tests_properties(compat.port.${_p}.libtorch PROPERTIES LABELS "${_labels}"
      PASS_REGULAR_EXPRESSION "same as LibTorch" ENVIRONMENT "${_env}")
    list(APPEND _record_commands
      COMMAND ${CMAKE_COMMAND} -E env ${_env} ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:port_${_p}_libtorch>
              -DOUT=${_ports_bin}/${_p}.libtorch.txt -DREF=${_ports_src}/expected/${_p}.txt
              -DWORKDIR=${_ports_bin}/${_p}.libtorch "-DLAUNCHER=${_launch}" -DRECORD=ON
              -P ${_ports_src}/run_port.cmake)
  endif()
endforeach()
if(GRADLAB_HAVE_LIBTORCH)
  add_custom_target(record_ports ${_record_commands}
    COMMENT "Recording the LibTorch outputs of the port corpus into checks/compat/ports/expected")
endif()
