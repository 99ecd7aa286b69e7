# The port corpus (issue 27): complete LibTorch programs in checks/compat/ports, each built twice
# from the same source: against gradlab through the compat header (<torch/torch.h> from
# src/compat), and, when LibTorch is found, against LibTorch 1.13. The LibTorch build's output is
# recorded in expected/<name>.txt (committed); both builds are compared with it by port_compare
# (tolerances: port_out.hpp). So the gradlab half checks values even where LibTorch is absent, and
# the LibTorch half checks that the recording is still LibTorch's.
#   cmake --build build/release --target record_ports     rewrites the recordings (LibTorch only)
set(GRADLAB_PORTS regression custom_function gradient_penalty custom_dataset finetune_frozen
  checkpoint)
set(_ports_src "${CMAKE_CURRENT_SOURCE_DIR}/compat/ports")
set(_ports_bin "${CMAKE_CURRENT_BINARY_DIR}/ports")
add_executable(port_compare compat/ports/port_compare.cpp)
target_link_libraries(port_compare PRIVATE gradlab_warnings)
set(_record_commands)
foreach(_p IN LISTS GRADLAB_PORTS)
  add_executable(port_${_p} compat/ports/${_p}.cpp)
  target_include_directories(port_${_p} PRIVATE "${PROJECT_SOURCE_DIR}/src/compat")
  target_link_libraries(port_${_p} PRIVATE gradlab::gradlab gradlab_warnings)
  add_test(NAME compat.port.${_p}
    COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:port_${_p}> -DOUT=${_ports_bin}/${_p}.gradlab.txt
            -DREF=${_ports_src}/expected/${_p}.txt -DCOMPARE=$<TARGET_FILE:port_compare>
            -DWORKDIR=${_ports_bin}/${_p}.gradlab -P ${_ports_src}/run_port.cmake)
  set_tests_properties(compat.port.${_p} PROPERTIES LABELS unit PASS_REGULAR_EXPRESSION "same as LibTorch")
  if(GRADLAB_HAVE_LIBTORCH)
    add_executable(port_${_p}_libtorch compat/ports/${_p}.cpp)
    target_link_libraries(port_${_p}_libtorch PRIVATE ${TORCH_LIBRARIES})
    target_compile_options(port_${_p}_libtorch PRIVATE ${GRADLAB_TORCH_FLAGS})
    add_test(NAME compat.port.${_p}.libtorch
      COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:port_${_p}_libtorch>
              -DOUT=${_ports_bin}/${_p}.libtorch.txt -DREF=${_ports_src}/expected/${_p}.txt
              -DCOMPARE=$<TARGET_FILE:port_compare> -DWORKDIR=${_ports_bin}/${_p}.libtorch
              -P ${_ports_src}/run_port.cmake)
    set_tests_properties(compat.port.${_p}.libtorch PROPERTIES LABELS unit
      PASS_REGULAR_EXPRESSION "same as LibTorch")
    list(APPEND _record_commands
      COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:port_${_p}_libtorch>
              -DOUT=${_ports_bin}/${_p}.libtorch.txt -DREF=${_ports_src}/expected/${_p}.txt
              -DWORKDIR=${_ports_bin}/${_p}.libtorch -DRECORD=ON -P ${_ports_src}/run_port.cmake)
  endif()
endforeach()
if(GRADLAB_HAVE_LIBTORCH)
  add_custom_target(record_ports ${_record_commands}
    COMMENT "Recording the LibTorch outputs of the port corpus into checks/compat/ports/expected")
endif()
