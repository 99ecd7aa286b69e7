# Every complete program (a ```cpp block with int main) of README.md and README.zh-CN.md is built
# here and run by ctest readme_program_<id> (label unit): its stdout must show the README's
# "prints" block (the rule is at the top of tools/check_readme_programs.py). The programs are
# extracted at configure time; a README edit re-runs configure (CMAKE_CONFIGURE_DEPENDS).
# readme_programs_lint checks that every other cpp block is captioned as a sketch.
find_package(Python3 COMPONENTS Interpreter)
if(NOT Python3_Interpreter_FOUND)
  message(STATUS "gradlab: no python3: the README programs are not built or run")
  return()
endif()
set(_tool "${PROJECT_SOURCE_DIR}/tools/check_readme_programs.py")
set(_out "${CMAKE_CURRENT_BINARY_DIR}/readme_programs")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             "${PROJECT_SOURCE_DIR}/README.md" "${PROJECT_SOURCE_DIR}/README.zh-CN.md" "${_tool}")
execute_process(COMMAND "${Python3_EXECUTABLE}" "${_tool}" extract --out "${_out}"
                OUTPUT_VARIABLE _listing RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "tools/check_readme_programs.py extract failed (${_rc})")
endif()
string(REPLACE "\n" ";" _listing "${_listing}")
foreach(_row IN LISTS _listing)
  if(NOT _row MATCHES "^(readme_[0-9a-f]+) ([0-9]+) (mpi|-)$")
    continue()
  endif()
  set(_id "${CMAKE_MATCH_1}")
  set(_mpi "${CMAKE_MATCH_3}")
  add_executable(${_id} "${_out}/${_id}.cpp")
  # gradlab::torch_compat: gradlab plus include/gradlab/compat (the README's <torch/torch.h>).
  target_link_libraries(${_id} PRIVATE gradlab::torch_compat gradlab_warnings)
  add_test(NAME readme_program_${_id}
    COMMAND "${Python3_EXECUTABLE}" "${_tool}" run --id ${_id} --exe "$<TARGET_FILE:${_id}>"
    WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}")
  # The pages show the run without a GPU (the CUDA example prints why there is none).
  set(_env "GRADLAB_DATA_DIR=${PROJECT_SOURCE_DIR}/data" "CUDA_VISIBLE_DEVICES=")
  set(_labels unit)
  if(_mpi STREQUAL "mpi")
    if(NOT GRADLAB_HAVE_MPI)
      set_tests_properties(readme_program_${_id} PROPERTIES DISABLED TRUE)
    endif()
    # The program starts 2 ranks of itself under mpirun (relaunch_with_mpirun), as root too.
    list(APPEND _env "OMPI_ALLOW_RUN_AS_ROOT=1" "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
                     "OPENBLAS_NUM_THREADS=1" ${GRADLAB_MPI_TEST_ENV})
    set(_labels unit mpi)
  endif()
  set_tests_properties(readme_program_${_id} PROPERTIES LABELS "${_labels}" ENVIRONMENT "${_env}"
                       TIMEOUT 300)
endforeach()
add_test(NAME readme_programs_lint COMMAND "${Python3_EXECUTABLE}" "${_tool}" lint
         WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}")
set_tests_properties(readme_programs_lint PROPERTIES LABELS unit)
# Both checks must be able to fail: a fixture page shows a changed 4th significant digit of what
# its program (a shell script) prints, and has a cpp block without a caption.
set(_fixture "checks/readme/fixture/README.md")
execute_process(COMMAND "${Python3_EXECUTABLE}" "${_tool}" extract --out "${_out}/fixture"
                        --pages "${_fixture}"
                OUTPUT_VARIABLE _fixture_listing RESULT_VARIABLE _rc)
string(REGEX MATCH "readme_[0-9a-f]+" _fixture_id "${_fixture_listing}")
add_test(NAME readme_programs_catch_a_changed_digit
  COMMAND "${Python3_EXECUTABLE}" "${_tool}" run --pages "${_fixture}" --id "${_fixture_id}"
          --exe "${CMAKE_CURRENT_SOURCE_DIR}/readme/fixture/prints_hello.sh"
  WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}")
add_test(NAME readme_programs_lint_catches_an_uncaptioned_block
  COMMAND "${Python3_EXECUTABLE}" "${_tool}" lint --pages "${_fixture}"
  WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}")
set_tests_properties(readme_programs_catch_a_changed_digit PROPERTIES LABELS unit
  PASS_REGULAR_EXPRESSION "FAIL [^\n]*fixture/README.md:[0-9]+: the page shows a line[^\n]*\n    README: hello 2.2982")
set_tests_properties(readme_programs_lint_catches_an_uncaptioned_block PROPERTIES LABELS unit
  PASS_REGULAR_EXPRESSION "fixture/README.md:20: a cpp block that is neither")
