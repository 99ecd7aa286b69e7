#!/usr/bin/env bash
# Two "hosts" on one machine for the multi-host tests (ctest label netns):
#   netns_hosts.sh two_hosts NETNS_DDP   DDP, 2 hosts x 2 ranks, equals one process (1e-12)
#   netns_hosts.sh host_dies NETNS_DDP   host b's link goes down mid-epoch: the survivors end
#                                        within the timeout naming the collective and the peers;
#                                        a restart from the last checkpoint ends with the weights
#                                        of an uninterrupted run
#   netns_hosts.sh bench BENCH_DISTRIBUTED  by hand: bench_distributed's all-reduce rows with one
#                                        rank per host, across the veth link (README, Distributed)
# Each host is a network namespace with its own host name (UTS namespace); a veth pair joins
# them (10.213.0.1 = hosta, 10.213.0.2 = hostb; the traffic stays inside them). mpirun starts on
# hosta with a hostfile and reaches hostb through netns_agent.sh instead of ssh; TCP is held to
# the veth subnet. Needs root (CAP_NET_ADMIN), ip (iproute2), unshare and mpirun; without them it
# prints "SKIP: ..." and exits 77 (ctest SKIP_RETURN_CODE). The namespaces and every process in
# them are removed on exit (trap), whatever happened.
set -u

skip() {
  echo "SKIP: $*"
  exit 77
}
fail() {
  echo "FAIL: $*"
  exit 1
}

case=${1:-}
exe=${2:-}
[ "$case" = two_hosts ] || [ "$case" = host_dies ] || [ "$case" = bench ] ||
  { echo "usage: $0 two_hosts|host_dies NETNS_DDP, or $0 bench BENCH_DISTRIBUTED" >&2; exit 2; }
[ -x "$exe" ] || { echo "$0: $exe is not an executable" >&2; exit 2; }
exe=$(readlink -f "$exe")
here=$(cd "$(dirname "$0")" && pwd)

[ "$(id -u)" = 0 ] || skip "network namespaces need root (this is uid $(id -u))"
for tool in ip unshare mpirun timeout; do
  command -v "$tool" >/dev/null || skip "no '$tool' on PATH (ip: iproute2, unshare: util-linux, mpirun: openmpi-bin)"
done

ns_a=gl$$a
ns_b=gl$$b
work=$(mktemp -d "${TMPDIR:-/tmp}/gradlab_netns.XXXXXX")
cleanup() {
  local ns pids
  for ns in "$ns_a" "$ns_b"; do
    pids=$(ip netns pids "$ns" 2>/dev/null)
    # shellcheck disable=SC2086  # one pid per word
    [ -n "$pids" ] && kill -9 $pids 2>/dev/null
    ip netns del "$ns" 2>/dev/null
  done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

ip netns add "$ns_a" 2>"$work/err" || skip "cannot create a network namespace: $(cat "$work/err")"
ip netns add "$ns_b" 2>"$work/err" || skip "cannot create a network namespace: $(cat "$work/err")"
ip -n "$ns_a" link add veth-a type veth peer name veth-b netns "$ns_b" 2>"$work/err" ||
  skip "cannot create a veth pair: $(cat "$work/err")"
if ! { ip -n "$ns_a" addr add 10.213.0.1/24 dev veth-a && ip -n "$ns_b" addr add 10.213.0.2/24 dev veth-b &&
  ip -n "$ns_a" link set lo up && ip -n "$ns_b" link set lo up &&
  ip -n "$ns_a" link set veth-a up && ip -n "$ns_b" link set veth-b up; }; then
  fail "could not configure the veth pair"
fi
ip netns exec "$ns_a" unshare --uts true 2>"$work/err" || skip "cannot create a UTS namespace: $(cat "$work/err")"

# The hostfile, and the agent's name resolution (host -> namespace).
printf 'hosta slots=2\nhostb slots=2\n' >"$work/hosts"
printf 'hosta %s\nhostb %s\n' "$ns_a" "$ns_b" >"$work/netns_hosts"
export GRADLAB_NETNS_HOSTS="$work/netns_hosts"
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# mpirun on hosta (its namespace, host name hosta): the README's hostfile command. NOTE:
# --bind-to none because both "hosts" are the same two cores; at most 30 s (the test's limit is 120).
mpirun_on_hosta() {
  (cd "$work" && ip netns exec "$ns_a" unshare --uts sh -c 'hostname hosta && exec "$@"' sh \
    timeout -s KILL 30 \
    mpirun -np 4 --hostfile hosts -x OPENBLAS_NUM_THREADS \
      --mca btl_tcp_if_include 10.213.0.0/24 --mca oob_tcp_if_include 10.213.0.0/24 \
      --mca plm_rsh_agent "$here/netns_agent.sh" --bind-to none \
      "$@")
}

if [ "$case" = bench ]; then
  # One rank per host (--map-by node), so every all-reduce crosses the veth pair; 600 s at most.
  (cd "$work" && ip netns exec "$ns_a" unshare --uts sh -c 'hostname hosta && exec "$@"' sh \
    timeout -s KILL 600 \
    mpirun -np 2 --map-by node --hostfile hosts -x OPENBLAS_NUM_THREADS \
      --mca btl_tcp_if_include 10.213.0.0/24 --mca oob_tcp_if_include 10.213.0.0/24 \
      --mca plm_rsh_agent "$here/netns_agent.sh" --bind-to none \
      "$exe" --benchmark_filter='allreduce/' "${@:3}")
  exit $?
fi

if [ "$case" = two_hosts ]; then
  mpirun_on_hosta "$exe" train --expect-hosts 2 --out "$work/final.ckpt" 2>&1 | tee "$work/log"
  rc=${PIPESTATUS[0]}
  [ "$rc" = 0 ] || fail "mpirun exited with $rc"
  grep -q '^4 ranks on 2 hosts: hosta (ranks 0 1) hostb (ranks 2 3)$' "$work/log" || fail "the ranks were not 2 per host"
  [ "$(grep -c 'max |DDP - single process|' "$work/log")" = 4 ] || fail "not every rank checked its weights"
  grep -q '^training finished' "$work/log" || fail "rank 0 did not finish"
  echo "PASS: 2 hosts x 2 ranks (network namespaces), DDP equals one process on the concatenated batch"
  exit 0
fi

# ---- host_dies ----------------------------------------------------------------------------------
timeout_s=3
now() { echo "${EPOCHREALTIME/,/.}"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

# 1. An uninterrupted run, the reference.
mpirun_on_hosta "$exe" train --ckpt "$work/ckpt_ref" --out "$work/uninterrupted.ckpt" >"$work/ref.log" 2>&1 ||
  { cat "$work/ref.log"; fail "the uninterrupted run failed"; }
echo "uninterrupted run: $(grep -c 'saved ckpt' "$work/ref.log") checkpoints, $(grep '^training finished' "$work/ref.log")"

# 2. The same run, paused before epoch 2 step 1 (two checkpoints written), then hostb's link goes
#    down and the ranks go on into the next step's all_reduce.
mkdir -p "$work/pause"
{
  mpirun_on_hosta "$exe" train --ckpt "$work/ckpt" --pause-at 2:1 --pause-dir "$work/pause" \
    --timeout-s "$timeout_s" --out "$work/never.ckpt"
} >"$work/fail.log" 2>&1 &  # (bash's "Killed" notice for mpirun lands there too)
job=$!
for _ in $(seq 300); do
  [ "$(find "$work/pause" -name 'paused.*' | wc -l)" = 4 ] && break
  sleep 0.1
done
[ "$(find "$work/pause" -name 'paused.*' | wc -l)" = 4 ] || { cat "$work/fail.log"; fail "the ranks did not reach the pause"; }
ip -n "$ns_b" link set veth-b down || fail "could not take hostb's link down"
t0=$(now)
touch "$work/pause/go"
echo "hostb's link is down, in the middle of epoch 2 (before step 1)"

# 3. The survivors (the ranks on hosta) must end by themselves at their timeout (they ask their
#    peers in its last quarter), not before; the limit adds slack for MPI_Abort on a loaded
#    machine.
survivors() {
  local p
  for p in $(ip netns pids "$ns_a" 2>/dev/null); do
    [ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$exe" ] && echo "$p"
  done
}
limit=$((timeout_s + 5))
t_end=""
for _ in $(seq $((limit * 20))); do
  if [ -z "$(survivors)" ]; then t_end=$(now); break; fi
  sleep 0.05
done
# mpirun cannot reach hostb's daemon any more and may wait for it forever: end what is left
# (every process of the job is in one of the namespaces; then the background job returns).
for ns in "$ns_a" "$ns_b"; do
  pids=$(ip netns pids "$ns" 2>/dev/null)
  # shellcheck disable=SC2086
  [ -n "$pids" ] && kill -9 $pids 2>/dev/null
done
wait "$job"
cat "$work/fail.log"
[ -n "$t_end" ] || fail "the ranks on hosta were still running $limit s after the link went down"
took=$(elapsed "$t0" "$t_end")
echo "the ranks on hosta ended $took s after the link went down (timeout ${timeout_s} s)"
awk -v t="$took" -v lim="$timeout_s" 'BEGIN { exit !(t >= lim) }' ||
  fail "the ranks on hosta ended before the timeout: something else ended them"
grep -Eq "gradlab.distributed: rank [01] of 4: all_reduce \(AVG, float64 \[[0-9]+\]\) did not complete within ${timeout_s} s: no answer from rank 2, 3 within" "$work/fail.log" ||
  fail "no survivor named the collective and the peers that are gone"
! grep -q '^training finished' "$work/fail.log" || fail "the run finished although hostb was gone"
ckpts=$(cd "$work/ckpt" && ls)
[ "$ckpts" = "$(printf 'ckpt-0000000004.safetensors\nckpt-0000000008.safetensors')" ] ||
  fail "expected the checkpoints of epochs 0 and 1 only, found: $ckpts"

# 4. hostb is back; every rank restarts from the newest checkpoint.
ip -n "$ns_b" link set veth-b up || fail "could not bring hostb's link up"
mpirun_on_hosta "$exe" train --ckpt "$work/ckpt" --resume --out "$work/resumed.ckpt" >"$work/resume.log" 2>&1 ||
  { cat "$work/resume.log"; fail "the resumed run failed"; }
cat "$work/resume.log"
grep -q '^resumed from the checkpoint after epoch 1 (step 8)$' "$work/resume.log" || fail "did not resume from the last checkpoint"
"$exe" compare "$work/uninterrupted.ckpt" "$work/resumed.ckpt" || fail "the resumed run ended with other weights"
echo "PASS: the survivors ended naming the collective and the peers; the resumed run equals the uninterrupted one"
