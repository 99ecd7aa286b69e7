# checks/diagnose extras: Report::html in a real browser (Debian's chromium and chromium-driver,
# driven by python3-selenium; skipped with a message when one is missing). html_fixture writes
# the pages of real doctor runs; browser_check.py opens each and checks what renders.
add_executable(html_fixture "${CMAKE_CURRENT_SOURCE_DIR}/diagnose/html_fixture.cpp")
target_link_libraries(html_fixture PRIVATE gradlab::gradlab gradlab_warnings nlohmann_json::nlohmann_json)
find_package(Python3 COMPONENTS Interpreter)
# NOTE: Debian's python3 has python3-selenium; another python3 may come first on PATH.
set(_browser_python "${Python3_EXECUTABLE}")
if(EXISTS /usr/bin/python3)
  set(_browser_python /usr/bin/python3)
endif()
if(_browser_python)
  set(_browser_check "${_browser_python}" "${CMAKE_CURRENT_SOURCE_DIR}/diagnose/browser_check.py"
                     --fixture "$<TARGET_FILE:html_fixture>")
  add_test(NAME diagnose_html_in_a_browser
    COMMAND ${_browser_check} --work "${CMAKE_CURRENT_BINARY_DIR}/diagnose_html")
  # The checks must be able to fail: the healthy page with its LR chart removed, or with a script
  # that throws, fails them (exit 0 only when they fail with the planted bug's words).
  add_test(NAME diagnose_html_browser_check_catches_a_missing_chart
    COMMAND ${_browser_check} --work "${CMAKE_CURRENT_BINARY_DIR}/diagnose_html_no_chart"
            --plant no-chart --expect-failure "healthy.html: chart lr_range missing")
  add_test(NAME diagnose_html_browser_check_catches_a_javascript_error
    COMMAND ${_browser_check} --work "${CMAKE_CURRENT_BINARY_DIR}/diagnose_html_js_error"
            --plant js-error --expect-failure "healthy.html: the browser logged a JavaScript error.*undefined_function_of_the_planted_bug")
  set_tests_properties(diagnose_html_in_a_browser diagnose_html_browser_check_catches_a_missing_chart
                       diagnose_html_browser_check_catches_a_javascript_error
    PROPERTIES LABELS unit SKIP_RETURN_CODE 77 TIMEOUT 180 ENVIRONMENT "${GRADLAB_TEST_ENV}")
  # The skip path must say why: pointed at a chromium that does not exist.
  add_test(NAME diagnose_html_browser_check_skips_without_chromium
    COMMAND ${_browser_check} --work "${CMAKE_CURRENT_BINARY_DIR}/diagnose_html_skip"
            --chromium "${CMAKE_CURRENT_BINARY_DIR}/no-such-chromium")
  set_tests_properties(diagnose_html_browser_check_skips_without_chromium PROPERTIES LABELS unit
    PASS_REGULAR_EXPRESSION "SKIP: no chromium at .*no-such-chromium")
endif()
