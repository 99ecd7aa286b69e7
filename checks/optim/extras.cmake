# ---- the fused CPU optimizer update at each forced capability level (GRADLAB_CPU_CAPABILITY) -----
# checks/optim/fused_step_prop.cpp once per level: the fused SGD / Adam / AdamW update equals the
# composite bit for bit at that level, at 1 and 2 threads. A level this CPU does not run is
# skipped: the library says so on stderr and ctest matches that line.
foreach(_cap default avx2 avx512)
  add_test(NAME capability_${_cap}_optim
    COMMAND "${CMAKE_COMMAND}" -E env GRADLAB_CPU_CAPABILITY=${_cap} "$<TARGET_FILE:prop_optim>"
            "--gtest_filter=FusedStep.*")
  set_tests_properties(capability_${_cap}_optim PROPERTIES LABELS property TIMEOUT 300
    SKIP_REGULAR_EXPRESSION "this CPU runs at most")
endforeach()
