#!/usr/bin/env python3
"""tools/plot_curves.py reads the same curves from a History CSV and from the event files of the
same Monitor run (the event values are float32), and renders both to PNG when matplotlib is there.

  plot_curves_test.py --fixture build/.../tb_fixture --work /tmp/x
Exit 0: all equal (and the PNGs written, or matplotlib missing: said so). Exit 1: a difference.
"""
import argparse
import importlib.util
import json
import pathlib
import struct
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    work = pathlib.Path(args.work)
    subprocess.run([args.fixture, str(work)], check=True, stdout=subprocess.DEVNULL)
    ex = json.loads((work / "expected.json").read_text(encoding="utf-8"))["monitor"]

    spec = importlib.util.spec_from_file_location("plot_curves", ROOT / "tools" / "plot_curves.py")
    pc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pc)
    from_csv, from_events = pc.read_csv(ex["csv"]), pc.read_events(ex["events"])
    f32 = lambda x: struct.unpack("<f", struct.pack("<f", x))[0]
    bad = []
    for key in pc.SERIES:
        steps_c, ys_c = from_csv[key]
        steps_e, ys_e = from_events[key]
        if len(steps_c) != 30:
            bad.append(f"{key}: {len(steps_c)} CSV rows, expected 30")
        if steps_c != steps_e:
            bad.append(f"{key}: steps differ: CSV {steps_c[:5]}..., events {steps_e[:5]}...")
        if [f32(y) for y in ys_c] != ys_e:
            bad.append(f"{key}: values differ between the CSV (as float32) and the event file")
    # a cut event file (a killed writer) still reads up to its last complete record
    events = sorted(pathlib.Path(ex["events"]).glob("events.out.tfevents.*"))[0]
    cut_dir = work / "cut"
    cut_dir.mkdir(exist_ok=True)
    data = events.read_bytes()
    (cut_dir / events.name).write_bytes(data[:len(data) - 5])
    if len(pc.read_events(cut_dir)["lr"][0]) != 29:
        bad.append("a cut file: expected the 29 complete lr records")

    try:
        import matplotlib  # noqa: F401
        have_mpl = True
    except ImportError:
        have_mpl = False
    if have_mpl:
        for name, src in (("csv.png", ex["csv"]), ("events.png", ex["events"])):
            out = work / name
            rc = pc.main([src, "--out", str(out), "--title", name])
            if rc != 0 or out.read_bytes()[:8] != b"\x89PNG\r\n\x1a\n":
                bad.append(f"{name}: no PNG written (rc {rc})")
    else:
        print("plot_curves_test: matplotlib missing: only the readers were checked")
    for b in bad:
        print("FAIL", b)
    print("plot_curves_test:", "FAILED" if bad else "OK")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
