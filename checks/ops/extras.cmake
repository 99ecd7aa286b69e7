# ---- op_traits_planted_*: a library op struct without one of its traits does not compile --------
# checks/ops/planted/missing_trait.cpp is compiled at test time (-fsyntax-only): without the
# trait it must fail with BuiltinOp's message, with it (the control) it must compile.
set(_planted_flags -std=c++20 -fsyntax-only "-I${PROJECT_SOURCE_DIR}/src")
add_test(NAME op_traits_planted_missing_trait
  COMMAND "${CMAKE_CXX_COMPILER}" ${_planted_flags} "${CMAKE_CURRENT_SOURCE_DIR}/ops/planted/missing_trait.cpp")
set_tests_properties(op_traits_planted_missing_trait PROPERTIES LABELS unit TIMEOUT 120
  PASS_REGULAR_EXPRESSION "a library op struct lacks a trait")
add_test(NAME op_traits_planted_control
  COMMAND "${CMAKE_CXX_COMPILER}" ${_planted_flags} -DGRADLAB_PLANT_TRAIT
          "${CMAKE_CURRENT_SOURCE_DIR}/ops/planted/missing_trait.cpp")
set_tests_properties(op_traits_planted_control PROPERTIES LABELS unit TIMEOUT 120)
