# ---- the bfloat16 matmul / conv checks with the native path switched off ----------------------
# check_amp's Bf16Native.* once per way of turning AVX-512 BF16 off: gradlab's level below avx512,
# the on/off switch, and oneDNN capped at AVX-512 without BF16 (a Skylake-X). On a CPU without
# AVX-512 BF16 (or a build without oneDNN) each is the fallback run again.
foreach(_env GRADLAB_CPU_CAPABILITY=avx2 GRADLAB_BF16_NATIVE=0 DNNL_MAX_CPU_ISA=AVX512_CORE)
  string(REGEX REPLACE "=.*" "" _name "${_env}")
  string(TOLOWER "${_name}" _name)
  add_test(NAME amp_bf16_off_by_${_name}
    COMMAND "${CMAKE_COMMAND}" -E env ${_env} "$<TARGET_FILE:check_amp>" "--gtest_filter=Bf16Native.*")
  set_tests_properties(amp_bf16_off_by_${_name} PROPERTIES LABELS unit TIMEOUT 300)
endforeach()
