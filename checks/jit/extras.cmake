# ---- the fused CPU executor at each forced capability level (GRADLAB_CPU_CAPABILITY) -------------
# checks/jit/fused_cpu_test.cpp once per level: compiled chains equal eager ones bit for bit at
# that level, and any thread count gives the same bits.
gradlab_capability_tests(fused check_jit "FusedCpu.*" unit 300)
