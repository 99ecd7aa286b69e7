# checks/compat extras: the LibTorch half of the compatibility corpus and the gradlab_torch
# harness checks, built when LibTorch is found (cmake/GradlabLibTorch.cmake). gradlab itself never
# links LibTorch; only these check programs and gradlab_torch do.

target_compile_definitions(check_compat PRIVATE GRADLAB_SOURCE_DIR="${PROJECT_SOURCE_DIR}")

if(GRADLAB_HAVE_LIBTORCH)
  add_executable(corpus_torch compat/corpus_torch.cpp)
  target_include_directories(corpus_torch PRIVATE "${CMAKE_CURRENT_SOURCE_DIR}")
  target_link_libraries(corpus_torch PRIVATE ${TORCH_LIBRARIES})
  target_compile_options(corpus_torch PRIVATE ${GRADLAB_TORCH_FLAGS})
  add_test(NAME compat.corpus_torch COMMAND corpus_torch)
  set_tests_properties(compat.corpus_torch PROPERTIES LABELS unit)
  add_executable(harness_torch compat/harness_torch.cpp)
  target_link_libraries(harness_torch PRIVATE gradlab_torch gradlab_warnings GTest::gtest_main)
  gradlab_discover(harness_torch unit)
endif()

# torch/script.h compiles (a program that includes it but never loads builds unchanged); a call to
# torch::jit::load does not, and its error says what gradlab offers instead (docs/libtorch_parity.md).
add_test(NAME compat_script_h_jit_load_is_refused
  COMMAND ${CMAKE_CXX_COMPILER} -std=c++20 -fsyntax-only "-I${PROJECT_SOURCE_DIR}/src"
          "-I${PROJECT_SOURCE_DIR}/src/compat" "${CMAKE_CURRENT_SOURCE_DIR}/compat/fixture/jit_load.cpp")
set_tests_properties(compat_script_h_jit_load_is_refused PROPERTIES LABELS unit
  PASS_REGULAR_EXPRESSION "torch::jit::load: gradlab cannot load TorchScript archives")

# The Tensor idioms of issue 27 compile unchanged through <torch/torch.h>, under g++ and (when
# found) clang++-19, which found tensor({{1.0, 2.0}, {3.0, 4.0}}) ambiguous before. Syntax only:
# checks/core/libtorch_api_test.cpp runs the same calls and checks their values.
find_program(GRADLAB_CLANGXX19 clang++-19)
set(_idiom_compilers "gcc=${CMAKE_CXX_COMPILER}")
if(GRADLAB_CLANGXX19)
  list(APPEND _idiom_compilers "clang19=${GRADLAB_CLANGXX19}")
endif()
foreach(_entry IN LISTS _idiom_compilers)
  string(REGEX MATCH "^([^=]+)=(.*)$" _m "${_entry}")
  add_test(NAME compat_tensor_idioms_${CMAKE_MATCH_1}
    COMMAND "${CMAKE_MATCH_2}" -std=c++20 -fsyntax-only "-I${PROJECT_SOURCE_DIR}/src"
            "-I${PROJECT_SOURCE_DIR}/src/compat" "${CMAKE_CURRENT_SOURCE_DIR}/compat/fixture/tensor_idioms.cpp")
  set_tests_properties(compat_tensor_idioms_${CMAKE_MATCH_1} PROPERTIES LABELS unit)
endforeach()

# The c10d face outside a launcher (a group of 1): collectives run, a rank or size that is not the
# launcher's is refused (compat/fixture/c10d_face.cpp). The ddp port program runs it under mpiexec.
if(GRADLAB_HAVE_MPI)
  add_executable(c10d_face compat/fixture/c10d_face.cpp)
  target_include_directories(c10d_face PRIVATE "${PROJECT_SOURCE_DIR}/src/compat")
  target_link_libraries(c10d_face PRIVATE gradlab::gradlab gradlab_warnings)
  add_test(NAME compat.c10d_face_outside_a_launcher COMMAND c10d_face)
  set_tests_properties(compat.c10d_face_outside_a_launcher PROPERTIES LABELS unit
    PASS_REGULAR_EXPRESSION "c10d_face: OK")
endif()

# torch::data through the compat header: torch_data_program.cpp, an MNIST-style LibTorch program,
# builds against gradlab with only <torch/torch.h> and runs its datasets, transforms, samplers and
# loaders. With LibTorch found, the same source built against LibTorch writes the reference that
# the gradlab build must match (compat.torch_data_matches_libtorch).
add_executable(torch_data_program compat/torch_data_program.cpp)
target_include_directories(torch_data_program PRIVATE "${PROJECT_SOURCE_DIR}/src/compat")
target_link_libraries(torch_data_program PRIVATE gradlab::gradlab gradlab_warnings)
set(_td_dir "${CMAKE_CURRENT_BINARY_DIR}/torch_data_program_files")
file(MAKE_DIRECTORY "${_td_dir}/gradlab" "${_td_dir}/libtorch")
add_test(NAME compat.torch_data_program
  COMMAND torch_data_program "${_td_dir}/gradlab" "${_td_dir}/gradlab.txt")
set_tests_properties(compat.torch_data_program PROPERTIES LABELS unit
  PASS_REGULAR_EXPRESSION "torch_data_program: OK")
if(GRADLAB_HAVE_LIBTORCH)
  add_executable(torch_data_program_libtorch compat/torch_data_program.cpp)
  target_link_libraries(torch_data_program_libtorch PRIVATE ${TORCH_LIBRARIES})
  target_compile_options(torch_data_program_libtorch PRIVATE ${GRADLAB_TORCH_FLAGS})
  add_test(NAME compat.torch_data_program_libtorch
    COMMAND torch_data_program_libtorch "${_td_dir}/libtorch" "${_td_dir}/libtorch.txt")
  set_tests_properties(compat.torch_data_program_libtorch PROPERTIES LABELS unit
    FIXTURES_SETUP torch_data_reference)
  add_test(NAME compat.torch_data_matches_libtorch
    COMMAND torch_data_program "${_td_dir}/gradlab" "${_td_dir}/gradlab_vs.txt"
            --compare "${_td_dir}/libtorch.txt")
  set_tests_properties(compat.torch_data_matches_libtorch PROPERTIES LABELS unit
    FIXTURES_REQUIRED torch_data_reference
    PASS_REGULAR_EXPRESSION "torch_data_program: same as the reference")
endif()
include("${CMAKE_CURRENT_SOURCE_DIR}/compat/ports/ports.cmake")
