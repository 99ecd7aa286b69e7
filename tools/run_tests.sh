#!/usr/bin/env bash
# Builds the release preset and runs every test except those labelled slow. Used by .ci/run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

start_ms=$(( $(date +%s%N) / 1000000 ))
report_time() {
  local rc=$? ms=$(( $(date +%s%N) / 1000000 - start_ms ))
  printf 'run_tests: exit %d, total wall time %d.%03d s\n' "$rc" $(( ms / 1000 )) $(( ms % 1000 ))
}
trap report_time EXIT

bash tools/setup.sh
cmake --preset release
cmake --build --preset release -j"$(nproc)"
ctest --preset release -LE slow --output-on-failure -j2
