# checks/testing: the op-table coverage test reads the public op headers (to find public
# functions without a row), so it needs to know where the sources are; the gradcheck test parses
# the report's JSON with nlohmann-json (header-only, tools/setup.sh installs it; tests only).
if(TARGET check_testing)
  find_package(nlohmann_json 3 REQUIRED)
  target_compile_definitions(check_testing PRIVATE GRADLAB_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  target_link_libraries(check_testing PRIVATE nlohmann_json::nlohmann_json)
endif()
