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

# ---- the elementwise kernels at each forced capability level (GRADLAB_CPU_CAPABILITY) ------------
# check_ops' elementwise tests (the ulp table, the half conversions, the unary / binary examples)
# and the op table's forward-vs-reference property (prop_testing) once per level.
gradlab_capability_tests(elementwise check_ops "VecMath.*:VecHalf.*:Unary.*:Binary.*" unit 300)
gradlab_capability_tests(op_table_reference prop_testing
  "OpTable/Reference.*:OpTable/HalfParity.*:OpTable/Gradcheck.*" property 600 WITH_ENV)

# ---- the AVX levels' objects share no code with baseline files (tools/check_vec_symbols.sh) ------
set(_vec_objects "${PROJECT_BINARY_DIR}/CMakeFiles/gradlab.dir/src/gradlab/backend/cpu/vec")
add_test(NAME vec_levels_share_no_code
  COMMAND bash "${PROJECT_SOURCE_DIR}/tools/check_vec_symbols.sh"
          "${_vec_objects}/vec_avx2.cpp.o" "${_vec_objects}/vec_avx512.cpp.o")
set_tests_properties(vec_levels_share_no_code PROPERTIES LABELS unit TIMEOUT 60)

# A name that is not a level: one clear line on stderr, and the best level runs.
add_test(NAME capability_unknown_name_is_reported
  COMMAND "${CMAKE_COMMAND}" -E env GRADLAB_CPU_CAPABILITY=avx9000 "$<TARGET_FILE:check_ops>"
          "--gtest_filter=VecMath.CapabilityIsOneOfTheLevels")
set_tests_properties(capability_unknown_name_is_reported PROPERTIES LABELS unit TIMEOUT 60
  PASS_REGULAR_EXPRESSION "GRADLAB_CPU_CAPABILITY=avx9000 is not a level; expected default, avx2 or avx512; using (default|avx2|avx512)")

# ---- the sum / max / min kernels at each forced capability level (vec/reduce.hpp) ---------------
# check_ops' ReduceLevels.* (each level's kernels, and the public sums at the forced level) and
# prop_core's thread-count identity, once per level; a level this CPU lacks is skipped.
gradlab_capability_tests(reduce check_ops "ReduceLevels.*:Reduce*" unit 300)
gradlab_capability_tests(threads_identity prop_core "Threads.*" property 600 WITH_ENV)
