# checks/compat extras: the LibTorch half of the compatibility corpus, built when LibTorch is
# found (GRADLAB_WITH_LIBTORCH: AUTO finds it if installed, ON requires it, OFF skips it).
# gradlab itself never links LibTorch; only these check programs do.

target_compile_definitions(check_compat PRIVATE GRADLAB_SOURCE_DIR="${PROJECT_SOURCE_DIR}")

set(GRADLAB_WITH_LIBTORCH AUTO CACHE STRING "Build the LibTorch halves of the checks (AUTO, ON, OFF)")
set(GRADLAB_HAVE_LIBTORCH FALSE)
if(NOT GRADLAB_WITH_LIBTORCH STREQUAL "OFF")
  if(GRADLAB_WITH_LIBTORCH STREQUAL "ON")
    find_package(Torch REQUIRED)
  else()
    find_package(Torch QUIET)
  endif()
  if(Torch_FOUND)
    set(GRADLAB_HAVE_LIBTORCH TRUE)
  endif()
endif()

if(GRADLAB_HAVE_LIBTORCH)
  message(STATUS "gradlab: LibTorch found; building the LibTorch halves of checks/compat")
  separate_arguments(_torch_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
  add_executable(corpus_torch compat/corpus_torch.cpp)
  target_include_directories(corpus_torch PRIVATE "${CMAKE_CURRENT_SOURCE_DIR}")
  target_link_libraries(corpus_torch PRIVATE ${TORCH_LIBRARIES})
  target_compile_options(corpus_torch PRIVATE ${_torch_flags})
  add_test(NAME compat.corpus_torch COMMAND corpus_torch)
  set_tests_properties(compat.corpus_torch PROPERTIES LABELS unit)
else()
  message(STATUS "gradlab: LibTorch not found (or GRADLAB_WITH_LIBTORCH=OFF); the LibTorch halves "
                 "of checks/compat are skipped (the gradlab half runs against the recording)")
endif()
