# Optional LibTorch peer (GRADLAB_WITH_LIBTORCH: AUTO finds it when installed, ON requires it,
# OFF skips it). gradlab itself never links LibTorch. When found:
#   gradlab_torch      torch_harness/: gradlab's gradcheck / gradgradcheck / property runner for
#                      LibTorch functions and torch::autograd::Functions
#   (checks/compat)    the LibTorch half of the compatibility corpus and the harness checks
# Install it with GRADLAB_WITH_LIBTORCH=1 bash tools/setup.sh (Debian's libtorch-dev, ~510 MB).

set(GRADLAB_WITH_LIBTORCH AUTO CACHE STRING "Build the LibTorch peer targets (AUTO, ON, OFF)")
set_property(CACHE GRADLAB_WITH_LIBTORCH PROPERTY STRINGS AUTO ON OFF)
set(GRADLAB_HAVE_LIBTORCH FALSE)
if(NOT GRADLAB_WITH_LIBTORCH STREQUAL "OFF" AND NOT GRADLAB_SANITIZE AND NOT GRADLAB_SANITIZE_THREAD)
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
  message(STATUS "gradlab: LibTorch found; building gradlab_torch and the LibTorch checks")
  separate_arguments(GRADLAB_TORCH_FLAGS UNIX_COMMAND "${TORCH_CXX_FLAGS}")
  add_library(gradlab_torch STATIC "${PROJECT_SOURCE_DIR}/torch_harness/gradlab_torch.cpp")
  target_include_directories(gradlab_torch PUBLIC "${PROJECT_SOURCE_DIR}/torch_harness")
  target_link_libraries(gradlab_torch PUBLIC gradlab::gradlab ${TORCH_LIBRARIES})
  target_compile_options(gradlab_torch PUBLIC ${GRADLAB_TORCH_FLAGS})
  target_link_libraries(gradlab_torch PRIVATE gradlab_warnings)
else()
  message(STATUS "gradlab: LibTorch not found (or GRADLAB_WITH_LIBTORCH=OFF): gradlab_torch and "
                 "the LibTorch checks are skipped")
endif()
