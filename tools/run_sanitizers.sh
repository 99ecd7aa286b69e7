#!/usr/bin/env bash
# Sanitizer runs, not part of the default CI run (tools/run_tests.sh), which must stay fast:
#   1. ASan + UBSan (preset debug-asan): the whole suite but the slow and cuda labels, -j2;
#   2. ThreadSanitizer (preset tsan; TSan and ASan cannot share a process): every data loading
#      test, the slow DataLoader stress test included.
# Usage: tools/run_sanitizers.sh [asan|tsan|all]   (default all). JOBS=N overrides -j2.
# A sanitizer report makes the test fail (UBSan/TSan halt_on_error, ASan aborts by default).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
what=${1:-all}
jobs=${JOBS:-2}

start=$(date +%s)
report_time() {
  local rc=$?
  printf 'run_sanitizers: exit %d, total wall time %d s\n' "$rc" $(( $(date +%s) - start ))
}
trap report_time EXIT

if [[ $what == all || $what == asan ]]; then
  cmake --preset debug-asan
  cmake --build --preset debug-asan -j"$jobs"
  ctest --preset debug-asan -LE "slow|cuda" -j"$jobs"
fi

if [[ $what == all || $what == tsan ]]; then
  cmake --preset tsan
  cmake --build --preset tsan --target check_data -j"$jobs"
  # The binary itself (not ctest) so that the *Slow* stress test runs too.
  # NOTE: OpenBLAS' own threads are not instrumented: one thread keeps them out of the picture.
  GRADLAB_DATA_DIR="$PWD/data" OPENBLAS_NUM_THREADS=1 \
    TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1 ${TSAN_OPTIONS:-}" \
    build/tsan/checks/check_data
fi
