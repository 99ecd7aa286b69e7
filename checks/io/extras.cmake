# checks/io extras: nlohmann-json and Python for the interop checks, the resume helper process,
# and the libFuzzer targets (built with clang when it can link -fsanitize=fuzzer).

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

# ---- fuzz targets: libFuzzer over the format layers (label slow) ------------------------------
# Only the format files (standard library, zlib, nlohmann-json) and the harness are built by
# clang (clang 14 cannot compile the rest of gradlab: it lacks std::source_location), so each
# fuzzer instruments exactly the code that reads untrusted bytes:
#   fuzz_safetensors  io/safetensors_format.cpp                         seeds checks/io/corpus
#   fuzz_checkpoint   io/safetensors_format.cpp + io/checkpoint_format.cpp  corpus_checkpoint
#   fuzz_npy          io/npy_format.cpp                                  seeds checks/io/corpus_npy
#   fuzz_csv          data/csv_format.cpp (+ zlib)                       seeds checks/io/corpus_csv
find_program(GRADLAB_FUZZ_CXX NAMES clang++-14 clang++)
set(_fuzz_ok FALSE)
if(GRADLAB_FUZZ_CXX AND NOT GRADLAB_SANITIZE AND NOT GRADLAB_SANITIZE_THREAD)
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

set(GRADLAB_FUZZ_SECONDS 30 CACHE STRING "How long each slow.fuzz_* ctest fuzzes")

# gradlab_fuzz_target(<name> CORPUS <dir> MAX_LEN <n> SOURCES <files...> [LIBS <flags...>])
# builds fuzz_<name> from checks/io/fuzz/<name>_fuzz.cpp and the listed src/gradlab files, and
# registers slow.fuzz_<name> (GRADLAB_FUZZ_SECONDS of fuzzing, new inputs into the build tree).
function(gradlab_fuzz_target name)
  cmake_parse_arguments(F "" "CORPUS;MAX_LEN" "SOURCES;LIBS" ${ARGN})
  get_target_property(_json_inc nlohmann_json::nlohmann_json INTERFACE_INCLUDE_DIRECTORIES)
  set(_exe "${CMAKE_CURRENT_BINARY_DIR}/fuzz_${name}")
  set(_srcs "${CMAKE_CURRENT_SOURCE_DIR}/io/fuzz/${name}_fuzz.cpp")
  set(_deps "")
  foreach(_s IN LISTS F_SOURCES)
    list(APPEND _srcs "${PROJECT_SOURCE_DIR}/src/gradlab/${_s}")
    string(REGEX REPLACE "\\.cpp$" ".hpp" _h "${PROJECT_SOURCE_DIR}/src/gradlab/${_s}")
    list(APPEND _deps "${_h}")
  endforeach()
  list(APPEND _deps "${PROJECT_SOURCE_DIR}/src/gradlab/core/format_error.hpp"
                    "${CMAKE_CURRENT_SOURCE_DIR}/io/fuzz/fuzz_check.hpp")
  set(_inc "-I${PROJECT_SOURCE_DIR}/src")
  foreach(_d IN LISTS _json_inc)
    list(APPEND _inc "-I${_d}")
  endforeach()
  add_custom_command(
    OUTPUT "${_exe}"
    COMMAND "${GRADLAB_FUZZ_CXX}" -std=c++20 -O1 -g -fno-omit-frame-pointer
            -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
            ${_inc} ${_srcs} ${F_LIBS} -o "${_exe}"
    DEPENDS ${_srcs} ${_deps}
    COMMENT "Building fuzz_${name} with ${GRADLAB_FUZZ_CXX} -fsanitize=fuzzer"
    VERBATIM)
  add_custom_target(fuzz_${name} ALL DEPENDS "${_exe}")
  # New inputs go to the build tree; the corpus in checks/io is the read-only seed corpus.
  set(_work "${CMAKE_CURRENT_BINARY_DIR}/fuzz_corpus_${name}")
  file(MAKE_DIRECTORY "${_work}")
  add_test(NAME slow.fuzz_${name}
    COMMAND "${_exe}" -max_total_time=${GRADLAB_FUZZ_SECONDS} -rss_limit_mb=2048
            -max_len=${F_MAX_LEN} -timeout=10 -print_final_stats=1 "${_work}"
            "${CMAKE_CURRENT_SOURCE_DIR}/io/${F_CORPUS}")
  set_tests_properties(slow.fuzz_${name} PROPERTIES LABELS "unit;slow" TIMEOUT 300)
endfunction()

if(_fuzz_ok)
  gradlab_fuzz_target(safetensors CORPUS corpus MAX_LEN 65536 SOURCES io/safetensors_format.cpp)
  gradlab_fuzz_target(checkpoint CORPUS corpus_checkpoint MAX_LEN 65536
    SOURCES io/safetensors_format.cpp io/checkpoint_format.cpp)
  gradlab_fuzz_target(npy CORPUS corpus_npy MAX_LEN 65536 SOURCES io/npy_format.cpp)
  # NOTE: 16 KiB of gzip may inflate to 16 MiB (the cap); longer inputs only slow the fuzzer.
  find_library(GRADLAB_FUZZ_ZLIB NAMES z REQUIRED)
  gradlab_fuzz_target(csv CORPUS corpus_csv MAX_LEN 16384 SOURCES data/csv_format.cpp
    LIBS "${GRADLAB_FUZZ_ZLIB}")
else()
  message(STATUS "gradlab: no clang with -fsanitize=fuzzer (or a sanitizer build): no fuzz targets")
endif()
