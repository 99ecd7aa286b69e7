# checks/io extras: nlohmann-json and Python for the interop checks, the resume helper process,
# and the libFuzzer target (built with clang when it can link -fsanitize=fuzzer).

find_package(nlohmann_json 3 REQUIRED)
find_package(Python3 COMPONENTS Interpreter)
target_link_libraries(check_io PRIVATE nlohmann_json::nlohmann_json)
target_compile_definitions(check_io PRIVATE
  GRADLAB_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
  GRADLAB_PYTHON3="${Python3_EXECUTABLE}")

# A separate program that trains, saves and resumes: resume equality needs a fresh process.
if(EXISTS "${CMAKE_CURRENT_SOURCE_DIR}/io/resume_helper.cpp")
  gradlab_check_executable(io_resume_helper io/resume_helper.cpp)
  add_dependencies(check_io io_resume_helper)
  target_compile_definitions(check_io PRIVATE GRADLAB_RESUME_HELPER="$<TARGET_FILE:io_resume_helper>")
endif()

# ---- fuzz_safetensors: libFuzzer over io/safetensors_format.cpp (label slow) -------------------
# Only that file and the harness are built by clang (clang 14 cannot compile the rest of gradlab:
# it lacks std::source_location), so the fuzzer instruments exactly the code that reads
# untrusted bytes.
find_program(GRADLAB_FUZZ_CXX NAMES clang++-14 clang++)
set(_fuzz_ok FALSE)
if(GRADLAB_FUZZ_CXX AND NOT GRADLAB_SANITIZE)
  set(_probe "${CMAKE_CURRENT_BINARY_DIR}/fuzz_probe.cpp")
  file(WRITE "${_probe}"
    "#include <cstdint>\n#include <cstddef>\n"
    "extern \"C\" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n")
  execute_process(
    COMMAND "${GRADLAB_FUZZ_CXX}" -fsanitize=fuzzer "${_probe}" -o "${CMAKE_CURRENT_BINARY_DIR}/fuzz_probe"
    RESULT_VARIABLE _fuzz_rc OUTPUT_QUIET ERROR_QUIET)
  if(_fuzz_rc EQUAL 0)
    set(_fuzz_ok TRUE)
  endif()
endif()
if(_fuzz_ok)
  get_target_property(_json_inc nlohmann_json::nlohmann_json INTERFACE_INCLUDE_DIRECTORIES)
  set(_fuzz_exe "${CMAKE_CURRENT_BINARY_DIR}/fuzz_safetensors")
  set(_fuzz_srcs
    "${CMAKE_CURRENT_SOURCE_DIR}/io/fuzz/safetensors_fuzz.cpp"
    "${PROJECT_SOURCE_DIR}/src/gradlab/io/safetensors_format.cpp")
  set(_fuzz_inc "-I${PROJECT_SOURCE_DIR}/src")
  foreach(_d IN LISTS _json_inc)
    list(APPEND _fuzz_inc "-I${_d}")
  endforeach()
  add_custom_command(
    OUTPUT "${_fuzz_exe}"
    COMMAND "${GRADLAB_FUZZ_CXX}" -std=c++20 -O1 -g -fno-omit-frame-pointer
            -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
            ${_fuzz_inc} ${_fuzz_srcs} -o "${_fuzz_exe}"
    DEPENDS ${_fuzz_srcs} "${PROJECT_SOURCE_DIR}/src/gradlab/io/safetensors_format.hpp"
    COMMENT "Building fuzz_safetensors with ${GRADLAB_FUZZ_CXX} -fsanitize=fuzzer"
    VERBATIM)
  add_custom_target(fuzz_safetensors ALL DEPENDS "${_fuzz_exe}")
  # New inputs go to the build tree; checks/io/corpus is the read-only seed corpus.
  set(_fuzz_work "${CMAKE_CURRENT_BINARY_DIR}/fuzz_corpus")
  file(MAKE_DIRECTORY "${_fuzz_work}")
  set(GRADLAB_FUZZ_SECONDS 30 CACHE STRING "How long the fuzz_safetensors ctest fuzzes")
  add_test(NAME slow.fuzz_safetensors
    COMMAND "${_fuzz_exe}" -max_total_time=${GRADLAB_FUZZ_SECONDS} -rss_limit_mb=2048
            -max_len=65536 -print_final_stats=1 "${_fuzz_work}" "${CMAKE_CURRENT_SOURCE_DIR}/io/corpus")
  set_tests_properties(slow.fuzz_safetensors PROPERTIES
    LABELS "unit;slow" TIMEOUT 300)
else()
  message(STATUS "gradlab: no clang with -fsanitize=fuzzer: fuzz_safetensors is not built")
endif()
