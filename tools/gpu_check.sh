#!/usr/bin/env bash
# gpu_check.sh: the checks that need a GPU, in one go, within 9 minutes.
#
#   bash tools/gpu_check.sh              on a machine with an NVIDIA GPU (exits 2 at once without)
#   bash tools/gpu_check.sh --deps DIR   on a bare GPU machine (CUDA toolkit + driver, no Debian
#                                        -dev packages, no network): first unpacks the .deb files
#                                        in DIR (made by tools/fetch_gpu_deps.sh on a machine with
#                                        apt) into BUILD_DIR/deps with `dpkg -x` (never into /), and
#                                        builds against that prefix. Combines with --dry-run.
#   bash tools/gpu_check.sh --dry-run    anywhere: the same steps without the GPU requirement, so
#                                        the build, the `cuda` ctest runs (reported as skipped),
#                                        lesson 17's CPU part and a few CPU benchmarks can be
#                                        checked on a machine without one
#
# Steps: configure build/gpu (Release; CUDA code for this GPU's architecture only), build only
# gradlab, check_cuda, prop_cuda, bench_cuda and lesson_17_cpu_vs_gpu, run `ctest -L cuda` with
# GRADLAB_REQUIRE_GPU=1 (a skip is a failure), run check_cuda again with GRADLAB_CUDA_SYNC=1 (a
# kernel fault names its own op), run compute-sanitizer (memcheck on check_cuda; racecheck and
# synccheck on the tiled kernel's tests), run lesson 17, run bench_cuda with a short min_time,
# then print one table: op, size, CPU time, GPU time, speed-up, GB/s, tiled/cuBLAS.
# Options: --build-dir DIR (default build/gpu), --budget SECONDS (default 540; 3600 with --dry-run,
# which on a small machine may have to build everything). Logs: DIR/gpu_check.*.log.
# Exit code: 0 when every step passed, 1 when one failed, 2 when there is no GPU (or no nvcc).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

dry_run=0
build_dir=build/gpu
budget=""
deps_dir=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dry-run) dry_run=1 ;;
    --deps) deps_dir="$2"; shift ;;
    --build-dir) build_dir="$2"; shift ;;
    --budget) budget="$2"; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "gpu_check: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done

# ---- is there a GPU? ------------------------------------------------------------------------
gpu_reason=""
if ! command -v nvidia-smi >/dev/null 2>&1; then
  gpu_reason="nvidia-smi not found (no NVIDIA driver installed)"
elif ! gpu_list=$(timeout 30 nvidia-smi -L 2>&1) || ! grep -q '^GPU ' <<<"$gpu_list"; then
  gpu_reason="nvidia-smi lists no GPU: $(head -n1 <<<"$gpu_list")"
fi
nvcc=$(command -v nvcc || { [[ -x /usr/local/cuda/bin/nvcc ]] && echo /usr/local/cuda/bin/nvcc; } || true)
[[ -z "$budget" ]] && budget=$([[ $dry_run -eq 1 ]] && echo 3600 || echo 540)

if [[ -n "$gpu_reason" || -z "$nvcc" ]]; then
  [[ -n "$gpu_reason" ]] && echo "gpu_check: NO GPU: $gpu_reason."
  [[ -z "$nvcc" ]] && echo "gpu_check: NO nvcc (PATH, /usr/local/cuda/bin): the build would be CPU-only."
  if [[ $dry_run -eq 0 ]]; then
    echo "gpu_check: this script is for machines with a GPU; nothing was built or run."
    echo "gpu_check: use --dry-run to check the build, the skipped cuda tests and the CPU parts here."
    exit 2
  fi
  echo "gpu_check: DRY RUN: GPU checks will be reported as SKIPPED, not passed;"
  echo "           benchmarks: a few small CPU sizes only."
else
  echo "gpu_check: $(head -n1 <<<"$gpu_list")"
  [[ $dry_run -eq 1 ]] && echo "gpu_check: --dry-run on a GPU machine: everything runs, but a skipped cuda test is not a failure."
fi

start=$SECONDS
mkdir -p "$build_dir"
log="$build_dir/gpu_check"
left() { echo $((budget - (SECONDS - start))); }
# limit <cap> <reserve>: seconds a step may take: at most cap, leaving reserve for later steps.
limit() {
  local l=$(( $(left) - $2 ))
  (( l > $1 )) && l=$1
  (( l < 10 )) && l=10
  echo "$l"
}
declare -a results=()
failed=0
record() {  # record <step> <rc> [note]
  local status=PASS
  if [[ $2 -eq 124 ]]; then status="FAIL (timed out)"; failed=1
  elif [[ $2 -ne 0 ]]; then status="FAIL (exit $2)"; failed=1; fi
  [[ -n "${3:-}" ]] && status="$status, $3"
  results+=("$(printf '%-12s %s' "$1" "$status")")
  echo "gpu_check: [$1] $status ($((SECONDS - start)) s elapsed)"
}
finish() {
  echo
  echo "==== gpu_check summary ($((SECONDS - start)) s, budget ${budget} s)$([[ $dry_run -eq 1 ]] && echo ', DRY RUN') ===="
  printf '%s\n' "${results[@]}"
  exit "$failed"
}

# ---- --deps: the Debian packages as files, unpacked into a prefix ------------------------------
cmake_args=(-S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DGRADLAB_BUILD_TESTS=ON
            -DGRADLAB_BUILD_LESSONS=ON -DGRADLAB_BUILD_BENCH=ON)
if [[ -n "$deps_dir" ]]; then
  shopt -s nullglob
  debs=("$deps_dir"/*.deb)
  shopt -u nullglob
  if [[ ${#debs[@]} -eq 0 ]]; then
    echo "gpu_check: --deps $deps_dir: no .deb files there (make them with tools/fetch_gpu_deps.sh DIR)"
    record deps 1 "no .deb in $deps_dir"; finish
  fi
  prefix="$(cd "$build_dir" && pwd)/deps"
  rm -rf "$prefix" && mkdir -p "$prefix"
  for deb in "${debs[@]}"; do
    if command -v dpkg >/dev/null 2>&1; then
      dpkg -x "$deb" "$prefix" || { record deps 1 "dpkg -x $deb failed"; finish; }
    else  # no dpkg (not a Debian-family image): a .deb is an ar archive holding data.tar.*
      tmp=$(mktemp -d)
      (cd "$tmp" && ar x "$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")") &&
        tar -xf "$tmp"/data.tar.* -C "$prefix" || { rm -rf "$tmp"; record deps 1 "unpacking $deb failed"; finish; }
      rm -rf "$tmp"
    fi
  done
  multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
  lib="$prefix/usr/lib/$multiarch"
  # NOTE: Debian reaches libblas.so / liblapack.so / cblas.h through alternatives links that its
  # postinst scripts make in /etc; `dpkg -x` makes none, so name the OpenBLAS files directly.
  blas_dir="$lib/openblas-pthread"
  for f in "$blas_dir/libblas.so" "$blas_dir/liblapack.so" "$prefix/usr/include/$multiarch/openblas-pthread/cblas.h"; do
    [[ -e "$f" ]] || { echo "gpu_check: --deps: $f missing after unpacking"; record deps 1 "incomplete: $f"; finish; }
  done
  cmake_args+=(-DCMAKE_PREFIX_PATH="$prefix/usr;$lib/cmake"
               -DBLAS_LIBRARIES="$blas_dir/libblas.so" -DLAPACK_LIBRARIES="$blas_dir/liblapack.so"
               -DCMAKE_CXX_FLAGS="-isystem $prefix/usr/include/$multiarch/openblas-pthread"
               -DCMAKE_BUILD_RPATH="$blas_dir;$lib")
  export LD_LIBRARY_PATH="$blas_dir:$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  record deps 0 "${#debs[@]} packages unpacked into $prefix"
fi

# ---- configure + build ------------------------------------------------------------------------
if [[ -z "$gpu_reason" ]]; then
  # Device code for this GPU only (e.g. 9.0 -> 90): half the nvcc time of the default 80;90.
  cap=$(timeout 30 nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d ' .')
  [[ "$cap" =~ ^[0-9]+$ ]] && cmake_args+=(-DCMAKE_CUDA_ARCHITECTURES="$cap")
fi
echo "gpu_check: configuring $build_dir"
timeout "$(limit 90 300)" cmake "${cmake_args[@]}" >"$log.configure.log" 2>&1 || {
  rc=$?; tail -n 30 "$log.configure.log"; record configure "$rc" "log: $log.configure.log"; finish; }
grep -E 'gradlab: CUDA backend' "$log.configure.log" || true
record configure 0

wanted=(gradlab check_cuda prop_cuda bench_cuda lesson_17_cpu_vs_gpu)
have=$(cmake --build "$build_dir" --target help 2>/dev/null)
targets=()
missing=()
# `help` lists "... gradlab" under Unix Makefiles and "gradlab: phony" under Ninja: match both.
for t in "${wanted[@]}"; do
  if grep -qE "^(\.\.\. $t( |$)|$t: )" <<<"$have"; then targets+=("$t"); else missing+=("$t"); fi
done
[[ ${#missing[@]} -gt 0 ]] && echo "gpu_check: WARNING: no such target (yet): ${missing[*]}"
# Keep going past a target that fails to compile: the others still run below (the GPU time is
# scarce), and the summary says the build failed. The programs are removed first so that a
# failed target cannot leave an old binary behind to be run (relinking costs seconds).
rm -f "$build_dir/checks/check_cuda" "$build_dir/checks/prop_cuda" "$build_dir/bench/bench_cuda" \
      "$build_dir/lessons/lesson_17_cpu_vs_gpu"
keep_going=(-k)
grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja' "$build_dir/CMakeCache.txt" && keep_going=(-k 0)
echo "gpu_check: building ${targets[*]} with -j$(nproc)"
timeout "$(limit 330 130)" cmake --build "$build_dir" -j"$(nproc)" --target "${targets[@]}" \
  -- "${keep_going[@]}" >"$log.build.log" 2>&1
rc=$?
note="log: $log.build.log"
[[ ${#missing[@]} -gt 0 ]] && { note="missing targets: ${missing[*]}, $note"; [[ $rc -eq 0 ]] && rc=1; }
if [[ $rc -ne 0 ]]; then
  grep -E 'error|Error' "$log.build.log" | head -n 20
  [[ $rc -ne 124 ]] && note="$note; the later steps run what did build"
fi
record build "$rc" "$note"
[[ $rc -eq 124 ]] && finish

# ---- ctest -L cuda ----------------------------------------------------------------------------
ctest_env=(OPENBLAS_NUM_THREADS=1)
[[ $dry_run -eq 0 ]] && ctest_env+=(GRADLAB_REQUIRE_GPU=1)
t=$(limit 150 80)
echo "gpu_check: ctest -L cuda (${ctest_env[*]})"
env "${ctest_env[@]}" timeout "$t" ctest --test-dir "$build_dir" -L cuda --output-on-failure \
  --timeout "$t" >"$log.ctest.log" 2>&1
rc=$?
grep -E '^ *[0-9]+/[0-9]+ Test|tests passed|cuda tests SKIPPED|No tests' "$log.ctest.log"
note=""
grep -q 'No tests were found' "$log.ctest.log" && { note="no cuda-labelled tests found"; [[ $rc -eq 0 ]] && rc=1; }
if [[ $dry_run -eq 1 && $rc -eq 0 ]] && grep -q 'Skipped' "$log.ctest.log"; then
  note="cuda tests SKIPPED (no GPU)"
fi
record "ctest cuda" "$rc" "$note"

# ---- the same tests with every kernel waited for, then under compute-sanitizer -----------------
# GRADLAB_CUDA_SYNC=1: a kernel fault is reported by the op that launched it, not by a later one.
check_cuda="$build_dir/checks/check_cuda"
if [[ -x "$check_cuda" && -z "$gpu_reason" ]]; then
  echo "gpu_check: check_cuda with GRADLAB_CUDA_SYNC=1"
  env "${ctest_env[@]}" GRADLAB_TEST_CUDA=device GRADLAB_CUDA_SYNC=1 timeout "$(limit 90 60)" \
    "$check_cuda" >"$log.sync.log" 2>&1
  rc=$?
  grep -E '^\[  (PASSED|FAILED) ' "$log.sync.log"
  record "cuda sync" "$rc" "log: $log.sync.log"
else
  record "cuda sync" 0 "SKIPPED ($([[ -n "$gpu_reason" ]] && echo 'no GPU' || echo 'check_cuda not built'))"
fi
sanitizer=$(command -v compute-sanitizer || { [[ -x /usr/local/cuda/bin/compute-sanitizer ]] && echo /usr/local/cuda/bin/compute-sanitizer; } || true)
if [[ -x "$check_cuda" && -z "$gpu_reason" && -n "$sanitizer" ]]; then
  # memcheck on the whole CUDA test program; racecheck and synccheck on the tiled kernel (the one
  # kernel with shared memory and barriers). Any report fails the step (--error-exitcode).
  for tool in memcheck racecheck synccheck; do
    filter='*'
    [[ $tool != memcheck ]] && filter='CudaBlasNN.TiledMatmul*'
    echo "gpu_check: compute-sanitizer --tool $tool ($filter)"
    env "${ctest_env[@]}" GRADLAB_TEST_CUDA=device timeout "$(limit 120 50)" \
      "$sanitizer" --tool "$tool" --error-exitcode 3 "$check_cuda" --gtest_filter="$filter" \
      >"$log.$tool.log" 2>&1
    rc=$?
    grep -E 'ERROR SUMMARY|^\[  (PASSED|FAILED) ' "$log.$tool.log"
    record "$tool" "$rc" "log: $log.$tool.log"
  done
else
  why="no GPU"
  [[ -z "$gpu_reason" && -z "$sanitizer" ]] && why="no compute-sanitizer (PATH, /usr/local/cuda/bin)"
  [[ -z "$gpu_reason" && ! -x "$check_cuda" ]] && why="check_cuda not built"
  record "sanitizers" 0 "SKIPPED ($why)"
fi

# ---- lesson 17 --------------------------------------------------------------------------------
lesson="$build_dir/lessons/lesson_17_cpu_vs_gpu"
if [[ -x "$lesson" ]]; then
  echo "gpu_check: lesson 17"
  timeout "$(limit 90 60)" "$lesson" >"$log.lesson17.log" 2>&1
  rc=$?
  grep -E '^\s+\[(ok|FAIL)\]|SKIPPED|speed-up| ms |^lesson 17' "$log.lesson17.log"
  [[ $rc -eq 0 ]] && ! grep -q '^lesson 17: OK' "$log.lesson17.log" && rc=1
  note="log: $log.lesson17.log"
  grep -q 'SKIPPED' "$log.lesson17.log" && note="GPU part SKIPPED (no GPU), $note"
  record "lesson 17" "$rc" "$note"
else
  record "lesson 17" 1 "not built"
fi

# ---- bench_cuda + table -----------------------------------------------------------------------
bench="$build_dir/bench/bench_cuda"
json="$log.bench_cuda.json"
if [[ -x "$bench" ]]; then
  bench_args=(--benchmark_min_time=0.05 --benchmark_repetitions=3 --benchmark_out="$json"
              --benchmark_out_format=json)
  # Without a GPU only the CPU side runs; the small sizes are enough to check the table.
  [[ -n "$gpu_reason" ]] && bench_args+=('--benchmark_filter=/(n:512|n:1M|4096x10|batch:64)/')
  echo "gpu_check: bench_cuda ${bench_args[*]}"
  rm -f "$json"
  timeout "$(limit 200 5)" "$bench" "${bench_args[@]}" >"$log.bench.log" 2>&1
  rc=$?
  grep -E '^bench_cuda:' "$log.bench.log"
  [[ $rc -ne 0 ]] && tail -n 20 "$log.bench.log"
  record bench_cuda "$rc" "log: $log.bench.log, JSON: $json"
else
  record bench_cuda 1 "not built"
fi

if [[ -s "$json" ]]; then
  echo
  python3 - "$json" <<'PY' || failed=1
"""The bench_cuda table: median of the repetitions of each <op>/<size>/<variant>."""
import json
import statistics
import sys
from collections import OrderedDict

with open(sys.argv[1]) as f:
    data = json.load(f)
to_ms = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
runs = OrderedDict()  # (op, size) -> variant -> [(ms, GB/s or None, error)]
for b in data["benchmarks"]:
    if b.get("run_type") == "aggregate":
        continue
    name = b.get("run_name", b["name"])
    for suffix in ("/manual_time", "/real_time"):
        name = name.removesuffix(suffix)
    op, size, variant = name.split("/", 2)
    err = b.get("error_message") if b.get("error_occurred") else None
    ms = b["real_time"] * to_ms[b.get("time_unit", "ns")] if not err else None
    runs.setdefault((op, size), OrderedDict()).setdefault(variant, []).append(
        (ms, b.get("GB"), err, b.get("GFLOP")))


def med(reps, i):
    vals = [r[i] for r in reps if r[i] is not None]
    return statistics.median(vals) if vals else None


def fmt_ms(v):
    return "-" if v is None else (f"{v:10.3f} ms" if v >= 0.01 else f"{v * 1e3:10.2f} us")


gpu = data.get("context", {}).get("gpu", "?")
print(f"bench_cuda, median of repetitions; GPU: {gpu}")
print(f"{'op':<14}{'size':<12}{'CPU':>14}{'GPU':>14}{'speed-up':>10}{'CPU GB/s':>10}{'GPU GB/s':>10}")
tiled = []
checks = []  # index_check/<op>/{blocking,device}: the index checks at the op vs on the device
errors = OrderedDict()  # one line per failed benchmark, however many repetitions failed
for (op, size), variants in runs.items():
    for v, reps in variants.items():
        for r in reps:
            if r[2]:
                errors.setdefault(f"{op}/{size}/{v}", r[2])
    if op == "gemm_kernel":
        c, t = variants.get("cublas", []), variants.get("tiled", [])
        tiled.append((size, med(c, 0), med(t, 0), med(c, 3), med(t, 3)))
        continue
    if op == "index_check":
        checks.append((size, med(variants.get("blocking", []), 0), med(variants.get("device", []), 0)))
        continue
    cpu, gpu_ms = med(variants.get("cpu", []), 0), med(variants.get("gpu", []), 0)
    speed = f"{cpu / gpu_ms:9.1f}x" if cpu and gpu_ms else "-"
    gbc, gbg = med(variants.get("cpu", []), 1), med(variants.get("gpu", []), 1)
    gb = lambda x: f"{x:10.1f}" if x else "-"  # the GB counter is a rate: GB/s
    print(f"{op:<14}{size:<12}{fmt_ms(cpu):>14}{fmt_ms(gpu_ms):>14}{speed:>10}{gb(gbc):>10}{gb(gbg):>10}")
if tiled:
    print(f"\n{'tiled vs cuBLAS':<26}{'cuBLAS':>14}{'tiled':>14}{'time ratio':>12}"
          f"{'cuBLAS TF/s':>13}{'tiled TF/s':>12}")
    tf = lambda x: f"{x / 1e3:12.1f}" if x else "-"  # the GFLOP counter is a rate: GFLOP/s
    for size, c, t, cf, tfl in tiled:
        ratio = f"{t / c:11.1f}x" if c and t else "-"
        print(f"{'gemm':<14}{size:<12}{fmt_ms(c):>14}{fmt_ms(t):>14}{ratio:>12}{tf(cf):>13}{tf(tfl):>12}")
if checks:
    print(f"\n{'index checks (GPU)':<26}{'blocking':>14}{'on device':>14}{'speed-up':>10}")
    for size, b, d in checks:
        speed = f"{b / d:9.2f}x" if b and d else "-"
        print(f"{'':<4}{size:<22}{fmt_ms(b):>14}{fmt_ms(d):>14}{speed:>10}")
if any(op == "matmul" for op, _ in runs):
    print("(CPU matmul stops at n = 2048: larger n take seconds per call on the CPU)")
for name, e in errors.items():
    print(f"ERROR {name}: {e}")
sys.exit(1 if errors else 0)
PY
fi
finish
