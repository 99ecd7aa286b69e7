#!/usr/bin/env bash
# Runs the lessons (through their README excerpt checks, which also require exit status 0), the
# lesson exercise answers, the root README programs and the excerpt checker's own fixtures under
# every BLAS kernel this CPU can run, at 1 and 2 threads (BLAS threads and gradlab's intra-op
# threads together), and once with every core kept busy by other processes. Prints one row per configuration and exits non-zero when one fails.
#
#   bash tools/check_portability.sh             # every configuration (13 here), the subset below
#   bash tools/check_portability.sh --quick     # Haswell kernels at 2 threads only (CI's subset)
#   bash tools/check_portability.sh --full      # the whole suite (ctest -LE slow, what
#       # tools/run_tests.sh runs, lessons included) in every configuration, not the subset;
#       # builds every target first (about 4 min of ctest per configuration on 2 idle cores)
#   CAPABILITIES="default avx2" bash tools/check_portability.sh
#       # only those levels of GRADLAB_CPU_CAPABILITY (gradlab's elementwise kernels, picked by
#       # cpuid at load time; default: every level, a level the CPU does not run is skipped;
#       # --quick: none)
#   JOBS=1 bash tools/check_portability.sh      # ctest -j (default 2)
#   CORETYPES="auto Zen" THREADS=2 LOADED=0 bash tools/check_portability.sh
#       # only those kernels ("auto": unset), thread counts, and no loaded run
#   bash tools/check_portability.sh --no-build  # use build/release as it is
#
# Configurations:
#   OPENBLAS_CORETYPE = unset (auto-detected), Prescott, Sandybridge, Haswell, Zen, SkylakeX:
#     a kernel the CPU cannot run is skipped; OPENBLAS_VERBOSE=2 tells which core OpenBLAS really
#     used, and a forced core that is not the one used counts as not runnable
#   OPENBLAS_NUM_THREADS = GRADLAB_NUM_THREADS = 1 and 2 for each ("threads=<t>")
#   GRADLAB_CPU_CAPABILITY = default, avx2, avx512 (auto-detected BLAS kernels, 2 threads each)
#   loaded: auto-detected kernels, 2 threads, with one busy-looping process per core
# The release build must exist (it is built first: cmake --preset release + the targets needed).
# Logs go to build/release/portability/<configuration>.log.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$PWD"

quick=0
full=0
build_first=1
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    --no-build) build_first=0 ;;
    --full) full=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "check_portability: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
  esac
done
jobs="${JOBS:-2}"
build="$root/build/release"
logs="$build/portability"

# An environment that already forces a kernel or a thread count would hide the sweep.
for v in OPENBLAS_CORETYPE OPENBLAS_NUM_THREADS GRADLAB_NUM_THREADS OMP_NUM_THREADS GRADLAB_CPU_CAPABILITY; do
  if [ -n "${!v+x}" ]; then
    echo "check_portability: $v=${!v} was set in the environment; unset for the sweep"
    unset "$v"
  fi
done

# ---- build what the checks run -----------------------------------------------------------------
if [ "$build_first" -eq 1 ]; then
  source /root/.ccache_env 2>/dev/null || true
  cmake --preset release >/dev/null
  if [ "$full" -eq 1 ]; then
    cmake --build --preset release -j"$(nproc)" >/dev/null
  fi
  targets=(--target check_lessons)
  for d in lessons/[0-9][0-9]_*/; do targets+=(--target "lesson_$(basename "$d")"); done
  for t in $(cmake --build --preset release --target help | sed -n 's/^\.\.\. \(readme_[0-9a-f]*\)$/\1/p'); do
    targets+=(--target "$t")
  done
  cmake --build --preset release -j"$(nproc)" "${targets[@]}" >/dev/null
fi
mkdir -p "$logs"

# As the ctest presets do (CMakePresets.json): OpenMP workers sleep between parallel regions
# instead of spinning. ctest -j2 runs two tests at once on 2 cores, and a test's spinning workers
# took the core another test's matrix product was waiting for: lesson 05's training step (its
# products split over 2 threads) stretched 9x at threads=2 and its timing claim failed (README,
# Threads: the spin trap on a busy machine). An environment that sets it keeps its own value.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"

# What ctest runs in each configuration: the lessons' README checks (each runs its lesson),
# the exercise answers, the README programs and the fixtures that prove the checker can fail.
tests='^(lesson_readme_|Lesson[0-9]+Answers\.|readme_program)'
# --full: every test but the slow ones, as tools/run_tests.sh runs them (the lessons themselves,
# their README checks and the answers are among them).
[ "$full" -eq 1 ] && tests='.'

# ---- which kernels this CPU runs -----------------------------------------------------------------
probe="$build/checks/check_lessons"
core_used() {  # the core OpenBLAS reports at start-up under the given environment
  env "$@" OPENBLAS_VERBOSE=2 "$probe" --gtest_list_tests 2>&1 >/dev/null |
    sed -n 's/^Core: *//p' | head -1
}
auto_core="$(core_used)"
cores=("")
if [ "$quick" -eq 1 ]; then
  cores=(Haswell)
else
  for c in Prescott Sandybridge Haswell Zen SkylakeX; do cores+=("$c"); done
fi
# CORETYPES="auto Zen" / THREADS="2" / LOADED=0 narrow the sweep (e.g. to rerun what failed).
if [ -n "${CORETYPES:-}" ]; then
  cores=()
  for c in $CORETYPES; do [ "$c" = auto ] && cores+=("") || cores+=("$c"); done
fi

rows=()
failed=0
run_config() {  # name, then env assignments
  local name="$1"
  shift
  local log="$logs/$name.log" start secs rc summary
  start=$(date +%s)
  set +e
  env "$@" ctest --test-dir "$build" -R "$tests" -LE slow -j"$jobs" --output-on-failure \
    >"$log" 2>&1
  rc=$?
  set -e
  secs=$(($(date +%s) - start))
  summary="$(grep -E '^[0-9]+% tests passed' "$log" | tail -1)"
  [ -n "$summary" ] || summary="ctest exit $rc (see the log)"
  if [ "$rc" -ne 0 ]; then
    failed=$((failed + 1))
    summary="$summary; failed: $(sed -n 's/^ *[0-9]* - \([^ ]*\) .*(Failed).*/\1/p' "$log" | tr '\n' ' ')"
  fi
  rows+=("$(printf '%-40s %-5s %5d s  %s' "$name" "$([ "$rc" -eq 0 ] && echo ok || echo FAIL)" \
    "$secs" "$summary")")
  echo "${rows[-1]}"
}

echo "check_portability: OpenBLAS auto-detects core '$auto_core'; logs in $logs"
thread_counts=(1 2)
[ "$quick" -eq 1 ] && thread_counts=(2)
[ -n "${THREADS:-}" ] && read -r -a thread_counts <<<"$THREADS"
for core in "${cores[@]}"; do
  label="${core:-auto($auto_core)}"
  env_core=()
  if [ -n "$core" ]; then
    used="$(core_used OPENBLAS_CORETYPE="$core")"
    if [ "$used" != "$core" ]; then
      rows+=("$(printf '%-40s %-5s %7s  %s' "coretype=$core" skip "" \
        "this CPU cannot run it (OpenBLAS used '$used')")")
      echo "${rows[-1]}"
      continue
    fi
    env_core=(OPENBLAS_CORETYPE="$core")
  fi
  for t in "${thread_counts[@]}"; do
    run_config "coretype=$label,threads=$t" "${env_core[@]}" OPENBLAS_NUM_THREADS="$t" GRADLAB_NUM_THREADS="$t"
  done
done

capabilities="default avx2 avx512"
[ "$quick" -eq 1 ] && capabilities=""
capabilities="${CAPABILITIES-$capabilities}"
for cap in $capabilities; do
  # gradlab says at load time when the CPU lacks the level (and uses its best one): skip that.
  if GRADLAB_CPU_CAPABILITY="$cap" "$probe" --gtest_list_tests 2>&1 >/dev/null | grep -q "this CPU runs at most"; then
    rows+=("$(printf '%-40s %-5s %7s  %s' "capability=$cap" skip "" "this CPU does not run it")")
    echo "${rows[-1]}"
    continue
  fi
  run_config "capability=$cap,threads=2" GRADLAB_CPU_CAPABILITY="$cap" OPENBLAS_NUM_THREADS=2 GRADLAB_NUM_THREADS=2
done

if [ "$quick" -eq 0 ] && [ "${LOADED:-1}" != 0 ]; then
  # Every core busy with another process: what a shared CI runner or a laptop compiling gives.
  busy=()
  for _ in $(seq "$(nproc)"); do
    bash -c 'while :; do :; done' &
    busy+=("$!")
  done
  trap 'kill "${busy[@]}" 2>/dev/null || true' EXIT
  run_config "loaded($(nproc) busy),coretype=auto,threads=2" OPENBLAS_NUM_THREADS=2 GRADLAB_NUM_THREADS=2
  kill "${busy[@]}" 2>/dev/null || true
  trap - EXIT
fi

echo
printf '%-40s %-5s %7s  %s\n' configuration result time "ctest"
for r in "${rows[@]}"; do echo "$r"; done
echo
if [ -z "$capabilities" ]; then
  echo "GRADLAB_CPU_CAPABILITY: not swept (CAPABILITIES=\"...\" adds a row per level)"
fi
if [ "$failed" -ne 0 ]; then
  echo "check_portability: $failed configuration(s) FAILED"
  exit 1
fi
echo "check_portability: every configuration passed"
