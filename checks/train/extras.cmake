# checks/train extras: the TensorBoard round trip (the real reader, a Python tool in the
# project's venv; skipped with a message when .venv/ or its tensorboard is missing).
add_executable(tb_fixture "${CMAKE_CURRENT_SOURCE_DIR}/train/tb_fixture.cpp")
target_link_libraries(tb_fixture PRIVATE gradlab::gradlab gradlab_warnings
                                         nlohmann_json::nlohmann_json)
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  # The venv is looked up when the test runs (tools/setup.sh may make it after configuring).
  set(GRADLAB_VENV "${PROJECT_SOURCE_DIR}/.venv" CACHE PATH
      "Python virtual environment with the test tools (tensorboard); made by tools/setup.sh")
  add_test(NAME tensorboard_reader
    COMMAND "${Python3_EXECUTABLE}" "${CMAKE_CURRENT_SOURCE_DIR}/train/tensorboard_reader.py"
            --venv "${GRADLAB_VENV}" --fixture "$<TARGET_FILE:tb_fixture>"
            --work "${CMAKE_CURRENT_BINARY_DIR}/tensorboard_reader")
  # exit 0 only when every value matched (and some were checked); 77: no venv / no tensorboard
  set_tests_properties(tensorboard_reader PROPERTIES LABELS unit SKIP_RETURN_CODE 77 TIMEOUT 180)
  # The skip path must say why: pointed at a venv that does not exist.
  add_test(NAME tensorboard_reader_skips_without_venv
    COMMAND "${Python3_EXECUTABLE}" "${CMAKE_CURRENT_SOURCE_DIR}/train/tensorboard_reader.py"
            --venv "${CMAKE_CURRENT_BINARY_DIR}/no-such-venv" --fixture "$<TARGET_FILE:tb_fixture>"
            --work "${CMAKE_CURRENT_BINARY_DIR}/tensorboard_reader_skip")
  set_tests_properties(tensorboard_reader_skips_without_venv PROPERTIES LABELS unit
    PASS_REGULAR_EXPRESSION "SKIP: no virtual environment at .*no-such-venv.*tools/setup.sh")
endif()
# the unit tests read JSON sidecars
target_link_libraries(check_train PRIVATE nlohmann_json::nlohmann_json ZLIB::ZLIB)
# tools/plot_curves.py: the CSV and the event-file readers agree, and both render a PNG. Run by
# Debian's python3, which has python3-matplotlib (another python3 may come first on PATH).
if(Python3_Interpreter_FOUND)
  set(_plot_python "${Python3_EXECUTABLE}")
  if(EXISTS /usr/bin/python3)
    set(_plot_python /usr/bin/python3)
  endif()
  add_test(NAME plot_curves_reads_csv_and_events
    COMMAND "${_plot_python}" "${CMAKE_CURRENT_SOURCE_DIR}/train/plot_curves_test.py"
            --fixture "$<TARGET_FILE:tb_fixture>" --work "${CMAKE_CURRENT_BINARY_DIR}/plot_curves")
  set_tests_properties(plot_curves_reads_csv_and_events PROPERTIES LABELS unit)
endif()
