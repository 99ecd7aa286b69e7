#!/usr/bin/env bash
# Builds the release preset and runs every lesson (ctest label lesson), in lesson order.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash tools/setup.sh
cmake --preset release
cmake --build --preset release -j"$(nproc)"
ctest --preset release -L lesson --output-on-failure
