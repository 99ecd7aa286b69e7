# checks/distributed extras: programs that run under mpirun (label mpi). Each ctest starts
# `mpirun -np 2 --oversubscribe` with OPENBLAS_NUM_THREADS=1 (two ranks on two cores) and Open
# MPI's two root variables. NOTE: set here on purpose: CI and the dev containers run as root, which
# Open MPI refuses without them, and the library never allows it by itself. Registered only when
# gradlab found MPI.

if(GRADLAB_HAVE_MPI)
  set(_mpi_env
    "OMPI_ALLOW_RUN_AS_ROOT=1" "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1" "OPENBLAS_NUM_THREADS=1"
    "OMPI_MCA_rmaps_base_oversubscribe=1" "GRADLAB_DATA_DIR=${PROJECT_SOURCE_DIR}/data"
    ${GRADLAB_MPI_TEST_ENV})
  set(_mpirun "${MPIEXEC_EXECUTABLE}" ${MPIEXEC_NUMPROC_FLAG} 2 --oversubscribe)

  # GoogleTest programs: every rank runs every test; the job fails when a rank fails.
  foreach(_name collectives ddp ddp_features sampler)
    gradlab_check_executable(mpi_${_name} distributed/${_name}_mpi.cpp distributed/mpi_main.cpp)
    target_link_libraries(mpi_${_name} PRIVATE GTest::gmock GTest::gtest MPI::MPI_CXX)
    add_test(NAME mpi.${_name} COMMAND ${_mpirun} $<TARGET_FILE:mpi_${_name}>
             WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}")
    set_tests_properties(mpi.${_name} PROPERTIES LABELS mpi TIMEOUT 120 ENVIRONMENT "${_mpi_env}")
  endforeach()

  # The same collectives called differently on the ranks, under GRADLAB_DISTRIBUTED_DEBUG=DETAIL.
  gradlab_check_executable(mpi_debug distributed/debug_mpi.cpp distributed/mpi_main.cpp)
  target_link_libraries(mpi_debug PRIVATE GTest::gmock GTest::gtest)
  add_test(NAME mpi.debug_detail COMMAND ${_mpirun} $<TARGET_FILE:mpi_debug> WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}")
  set_tests_properties(mpi.debug_detail PROPERTIES LABELS mpi TIMEOUT 120
    ENVIRONMENT "${_mpi_env};GRADLAB_DISTRIBUTED_DEBUG=DETAIL")

  gradlab_check_executable(mpi_nccl distributed/nccl_mpi.cpp)
  add_test(NAME mpi.nccl COMMAND ${_mpirun} $<TARGET_FILE:mpi_nccl> WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}")
  set_tests_properties(mpi.nccl PROPERTIES LABELS mpi TIMEOUT 120 ENVIRONMENT "${_mpi_env}")

  # A failing rank ends the job with its message within the time limit. PASS_REGULAR_EXPRESSION
  # replaces the exit-code check (mpirun exits non-zero, as it must); FAIL_REGULAR_EXPRESSION
  # catches a rank 0 that went on past the collective; TIMEOUT is the time limit.
  gradlab_check_executable(mpi_failure distributed/failure_mpi.cpp)
  add_test(NAME mpi.failure_exception_ends_the_job COMMAND ${_mpirun} $<TARGET_FILE:mpi_failure> throw)
  set_tests_properties(mpi.failure_exception_ends_the_job PROPERTIES LABELS mpi TIMEOUT 20
    ENVIRONMENT "${_mpi_env}"
    PASS_REGULAR_EXPRESSION "gradlab.distributed: rank 1 of 2: uncaught exception: planted failure on rank 1: loss is NaN at step 3"
    FAIL_REGULAR_EXPRESSION "completed, which it must not")
  add_test(NAME mpi.failure_hang_times_out_and_ends_the_job COMMAND ${_mpirun} $<TARGET_FILE:mpi_failure> hang)
  set_tests_properties(mpi.failure_hang_times_out_and_ends_the_job PROPERTIES LABELS mpi TIMEOUT 20
    ENVIRONMENT "${_mpi_env}"
    PASS_REGULAR_EXPRESSION "gradlab.distributed: rank 0 of 2: all_reduce \\(SUM, float32 \\[4\\]\\) did not complete within 2(\\.0+)? s"
    FAIL_REGULAR_EXPRESSION "completed, which it must not")
  add_test(NAME mpi.failure_silent_peer_is_named COMMAND ${_mpirun} $<TARGET_FILE:mpi_failure> silent)
  set_tests_properties(mpi.failure_silent_peer_is_named PROPERTIES LABELS mpi TIMEOUT 20
    ENVIRONMENT "${_mpi_env}"
    PASS_REGULAR_EXPRESSION "gradlab.distributed: rank 0 of 2: all_reduce \\(SUM, float32 \\[4\\]\\) did not complete within 2 s: no answer from rank 1 within 0.5 s"
    FAIL_REGULAR_EXPRESSION "completed, which it must not")

  # Uneven inputs: without a Join the rank with more batches waits in a bucket all-reduce the
  # other never starts, until the timeout ends the job; inside a Join both finish.
  add_test(NAME mpi.failure_uneven_inputs_without_join_time_out COMMAND ${_mpirun} $<TARGET_FILE:mpi_failure> uneven)
  set_tests_properties(mpi.failure_uneven_inputs_without_join_time_out PROPERTIES LABELS mpi TIMEOUT 20
    ENVIRONMENT "${_mpi_env}"
    PASS_REGULAR_EXPRESSION "gradlab.distributed: rank 0 of 2: all_reduce \\(AVG, float32 \\[21\\]\\) did not complete within 2 s: no answer from rank 1"
    FAIL_REGULAR_EXPRESSION "completed, which it must not")
  add_test(NAME mpi.uneven_inputs_inside_a_join_finish COMMAND ${_mpirun} $<TARGET_FILE:mpi_failure> uneven_join)
  set_tests_properties(mpi.uneven_inputs_inside_a_join_finish PROPERTIES LABELS mpi TIMEOUT 20
    ENVIRONMENT "${_mpi_env}" PASS_REGULAR_EXPRESSION "rank 1: uneven batches inside a Join: done")

  # Two "hosts" on this machine (label netns): network namespaces joined by a veth pair, Open
  # MPI across them with a hostfile and a launch agent in place of ssh (netns_hosts.sh). Without
  # root or namespaces the script prints "SKIP: ..." and exits 77.
  gradlab_check_executable(netns_ddp distributed/netns_ddp.cpp)
  foreach(_case two_hosts host_dies)
    add_test(NAME mpi.netns_${_case}
             COMMAND bash "${CMAKE_CURRENT_SOURCE_DIR}/distributed/netns_hosts.sh" ${_case} $<TARGET_FILE:netns_ddp>)
    set_tests_properties(mpi.netns_${_case} PROPERTIES LABELS "mpi;netns" TIMEOUT 120 SKIP_RETURN_CODE 77
      PROCESSORS 2 ENVIRONMENT "${_mpi_env}")
  endforeach()
endif()

if(GRADLAB_HAVE_MPI)
  target_compile_definitions(check_distributed PRIVATE GRADLAB_TEST_HAVE_MPI=1)
endif()

# The READMEs' hostfile example is mpi.netns_two_hosts's command (and the check catches a change).
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  add_test(NAME readme_netns_command_is_the_tests
           COMMAND "${Python3_EXECUTABLE}" "${CMAKE_CURRENT_SOURCE_DIR}/distributed/netns_readme_command.py")
  set_tests_properties(readme_netns_command_is_the_tests PROPERTIES LABELS unit TIMEOUT 30)
endif()
