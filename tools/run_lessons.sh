#!/usr/bin/env bash
# The main job: set up, build, and run the lessons in order, each one's own output under a header,
# then a table of verdicts and claim counts. Exits non-zero when a lesson fails.
#
#   bash tools/run_lessons.sh            # every lesson
#   bash tools/run_lessons.sh 07         # one lesson, by number ...
#   bash tools/run_lessons.sh training_loop    # ... or by slug (or 07_training_loop)
#
# CI runs the same executables through ctest (`ctest --preset release -L lesson`), which also
# checks every README excerpt against the real output.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$PWD"

# ---- which lessons ----------------------------------------------------------------------------
all=()
for d in lessons/[0-9][0-9]_*/; do
  [ -f "$d/main.cpp" ] && all+=("$(basename "$d")")
done
selected=()
if [ "$#" -eq 0 ]; then
  selected=("${all[@]}")
else
  for want in "$@"; do
    found=""
    for name in "${all[@]}"; do
      if [ "$want" = "$name" ] || [ "$want" = "${name%%_*}" ] || [ "$want" = "${name#*_}" ]; then
        found="$name"
      fi
    done
    if [ -z "$found" ]; then
      echo "run_lessons: no lesson '$want'; there are: ${all[*]}" >&2
      exit 2
    fi
    selected+=("$found")
  done
fi

# ---- set-up and build (only the lessons asked for) --------------------------------------------
bash tools/setup.sh
cmake --preset release >/dev/null
targets=()
for name in "${selected[@]}"; do targets+=(--target "lesson_$name"); done
cmake --build --preset release -j"$(nproc)" "${targets[@]}"

# ---- run each, showing its output --------------------------------------------------------------
bin="$root/build/release/lessons"
log_dir="$(mktemp -d)"
trap 'rm -rf "$log_dir"' EXIT
# A progress bar redraws its line when we are on a terminal, although tee sits in between.
[ -t 1 ] && export GRADLAB_PROGRESS="${GRADLAB_PROGRESS:-tty}"
rows=()
failed=0
for name in "${selected[@]}"; do
  printf '\n################ lesson %s ################\n' "$name"
  log="$log_dir/$name.txt"
  start=$(date +%s.%N)
  set +e
  GRADLAB_DATA_DIR="$root/data" GRADLAB_LESSON_OUTPUT_DIR="$bin/output/$name" \
    "$bin/lesson_$name" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  set -e
  secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  ok=$(grep -c '^  \[ok\]   ' "$log" || true)
  bad=$(grep -c '^  \[FAIL\] ' "$log" || true)
  verdict=$(grep -E "^lesson [0-9]+: " "$log" | tail -1 | sed -E 's/^lesson [0-9]+: //')
  [ -n "$verdict" ] || verdict="no verdict (exit $rc)"
  if [ "$rc" -ne 0 ]; then failed=$((failed + 1)); fi
  rows+=("$(printf '%-26s %-30s %7s %7s s' "$name" "$verdict" "$ok/$((ok + bad))" "$secs")")
done

# ---- the table -------------------------------------------------------------------------------
echo
printf '%-26s %-30s %7s %9s\n' "lesson" "verdict" "claims" "time"
printf '%-26s %-30s %7s %9s\n' "------" "-------" "------" "----"
for r in "${rows[@]}"; do echo "$r"; done
echo
if [ "$failed" -ne 0 ]; then
  echo "run_lessons: $failed of ${#selected[@]} lesson(s) FAILED"
  exit 1
fi
echo "run_lessons: all ${#selected[@]} lesson(s) OK"
