#!/usr/bin/env python3
"""Ratios of gradlab to its baselines from one Google Benchmark JSON run.

Benchmarks named <group>/<variant> (bench/bench_core.cpp) are compared within their group: every
variant other than the first is divided by the first one (the baseline), using the group's rate
counter (GFLOP or GB per second) when there is one, else the time per op (per_op counter) or the
wall time (baseline time / variant time).
With --benchmark_repetitions, the median of the repetitions is used.

  build/release/bench/bench_core --benchmark_min_time=0.2 --benchmark_repetitions=5 \
      --benchmark_format=json > core.json
  python3 tools/bench_ratios.py core.json
"""
import json
import statistics
import sys
from collections import OrderedDict

RATE_COUNTERS = ("GFLOP", "GB")


def load(path):
    with open(path) if path != "-" else sys.stdin as f:
        data = json.load(f)
    runs = OrderedDict()
    for b in data["benchmarks"]:
        if b.get("run_type") == "aggregate":
            continue
        name = b.get("run_name", b["name"])
        name = name.removesuffix("/real_time")
        runs.setdefault(name, []).append(b)
    return data.get("context", {}), runs


def summary(reps):
    """(median real time in its unit, unit, median rate counter or None, counter name, per_op)."""
    unit = reps[0].get("time_unit", "ns")
    t = statistics.median(r["real_time"] for r in reps)
    for c in RATE_COUNTERS:
        if c in reps[0]:
            return t, unit, statistics.median(r[c] for r in reps), c, None
    per_op = statistics.median(r["per_op"] for r in reps) if "per_op" in reps[0] else None
    return t, unit, None, None, per_op


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "-"
    context, runs = load(path)
    groups = OrderedDict()
    for name, reps in runs.items():
        group, _, variant = name.rpartition("/")
        groups.setdefault(group, []).append((variant, summary(reps), len(reps)))
    print(f"# {context.get('executable', '')}  {context.get('date', '')}  "
          f"cpus={context.get('num_cpus', '?')}  (median of repetitions)")
    print(f"{'benchmark':<44} {'time':>14} {'rate':>16} {'vs first':>9}")
    for group, rows in groups.items():
        base = rows[0][1]
        for variant, (t, unit, rate, cname, per_op), n in rows:
            if rate is not None:
                rate_s = f"{rate:10.2f} {cname}/s"
                ratio = rate / base[2] if base[2] else float("nan")
            else:
                rate_s = f"{per_op * 1e6:10.3f} us/op" if per_op is not None else ""
                if per_op is not None and base[4] is not None:
                    ratio = base[4] / per_op
                else:
                    ratio = base[0] / t if t else float("nan")
            print(f"{group + '/' + variant:<44} {t:11.3f} {unit:<2} {rate_s:>16} {ratio:8.2f}x")


if __name__ == "__main__":
    main()
