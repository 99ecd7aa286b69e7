#!/usr/bin/env bash
# run_on_gpu.sh <test program>: runs a checks/cuda program on the GPU backend
# (GRADLAB_TEST_CUDA=device). Exit 77, which ctest reports as "Skipped", when every test skipped
# and none failed, i.e. there is no GPU; the reason is printed. Failures keep their exit code.
set -uo pipefail
out=$("$1" 2>&1)
rc=$?
printf '%s\n' "$out"
[[ $rc -ne 0 ]] && exit "$rc"
if grep -q '^\[  PASSED  \] 0 tests' <<<"$out" && grep -q '^\[  SKIPPED \]' <<<"$out"; then
  echo "cuda tests SKIPPED: $(grep -m1 -o 'no GPU: .*' <<<"$out")"
  exit 77
fi
exit 0
