# The `cuda` label: the checks/cuda programs once more, on a real GPU (GRADLAB_TEST_CUDA=device).
# Their discovered tests (labels unit / property) run the same code on the host emulator.
# Without a GPU every test skips with the reason and ctest reports the run as Skipped (exit 77);
# GRADLAB_REQUIRE_GPU=1 in the environment (tools/gpu_check.sh sets it) makes that a failure.
foreach(_t check_cuda prop_cuda)
  if(TARGET ${_t})
    add_test(NAME cuda.${_t}
      COMMAND bash "${CMAKE_CURRENT_SOURCE_DIR}/cuda/run_on_gpu.sh" "$<TARGET_FILE:${_t}>")
    set_tests_properties(cuda.${_t} PROPERTIES
      LABELS cuda
      WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
      ENVIRONMENT "GRADLAB_TEST_CUDA=device;${GRADLAB_TEST_ENV}"
      SKIP_RETURN_CODE 77
      TIMEOUT 600)
  endif()
endforeach()
