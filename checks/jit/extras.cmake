# ---- the fused CPU executor at each forced capability level (GRADLAB_CPU_CAPABILITY) -------------
# checks/jit/fused_cpu_test.cpp once per level: compiled chains equal eager ones bit for bit at
# that level, and any thread count gives the same bits. A level this CPU does not run is skipped:
# the library says so on stderr and ctest matches that line.
foreach(_cap default avx2 avx512)
  add_test(NAME capability_${_cap}_fused
    COMMAND "${CMAKE_COMMAND}" -E env GRADLAB_CPU_CAPABILITY=${_cap} "$<TARGET_FILE:check_jit>"
            "--gtest_filter=FusedCpu.*")
  set_tests_properties(capability_${_cap}_fused PROPERTIES LABELS unit TIMEOUT 300
    SKIP_REGULAR_EXPRESSION "this CPU runs at most")
endforeach()
