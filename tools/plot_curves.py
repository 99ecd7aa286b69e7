#!/usr/bin/env python3
"""Render training curves (loss, gradient norm, learning rate per step) to a PNG.

Input: History CSV files (train::History::write_csv: "# ..." run-info lines, then
epoch,step,loss,grad_norm,lr) or TensorBoard log directories written by train::SummaryWriter /
train::Monitor (scalars "loss", "grad_norm", "lr"). Several inputs are drawn on the same axes,
labelled by --label (default: the file or folder name). Non-finite losses (a diverged run) end
the curve where they start.

  python3 tools/plot_curves.py run.csv --out curves.png
  python3 tools/plot_curves.py lr_high.csv lr_good.csv --label "lr 2.0" --label "lr 0.05" --out lr.png
  python3 tools/plot_curves.py runs/exp1 --out exp1.png          # an event-file folder

Needs matplotlib (Debian: python3-matplotlib, which tools/setup.sh installs; run it with
/usr/bin/python3). The event files are decoded here with the standard library only (TFRecord
frames, then Event -> Summary -> Value.simple_value); TensorBoard's own reader checks the same
files in checks/train/tensorboard_reader.py.
"""

import argparse
import csv
import math
import pathlib
import struct
import sys

SERIES = ("loss", "grad_norm", "lr")


def read_csv(path):
    steps, cols = [], {k: [] for k in SERIES}
    with open(path, newline="", encoding="utf-8") as f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        for row in rows:
            steps.append(int(row["step"]))
            for k in SERIES:
                cols[k].append(float(row[k]))
    return {k: (steps, cols[k]) for k in SERIES}


def _varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        if not c & 0x80:
            return v, i
        shift += 7


def _fields(b):
    """(field number, wire type, value) of one protobuf message."""
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _varint(b, i)
        elif wire == 1:
            v, i = b[i:i + 8], i + 8
        elif wire == 5:
            v, i = b[i:i + 4], i + 4
        elif wire == 2:
            n, i = _varint(b, i)
            v, i = b[i:i + n], i + n
        else:
            raise ValueError(f"unknown wire type {wire}")
        yield num, wire, v


def read_events(folder):
    """Scalars of every events.out.tfevents.* file directly in `folder`, by tag."""
    out = {}
    files = sorted(pathlib.Path(folder).glob("events.out.tfevents.*"))
    if not files:
        raise SystemExit(f"plot_curves: no events.out.tfevents.* file in {folder}")
    for path in files:
        data = path.read_bytes()
        at = 0
        while at + 12 <= len(data):
            (n,) = struct.unpack_from("<Q", data, at)
            if at + 16 + n > len(data):
                break  # a partial last record (a killed writer): stop before it
            event = data[at + 12:at + 12 + n]
            at += 16 + n
            step, summary = 0, None
            for num, _, v in _fields(event):
                if num == 2:
                    step = v
                elif num == 5:
                    summary = v
            if summary is None:
                continue
            for num, _, value in _fields(summary):
                if num != 1:
                    continue
                tag, x = None, None
                for vn, vw, vv in _fields(value):
                    if vn == 1:
                        tag = vv.decode("utf-8")
                    elif vn == 2 and vw == 5:
                        (x,) = struct.unpack("<f", vv)
                if tag is not None and x is not None:
                    out.setdefault(tag, ([], []))
                    out[tag][0].append(step)
                    out[tag][1].append(x)
    return out


def load(source):
    p = pathlib.Path(source)
    return read_events(p) if p.is_dir() else read_csv(p)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("inputs", nargs="+", help="History CSV files or event-file folders")
    ap.add_argument("--label", action="append", default=[], help="one per input, in order")
    ap.add_argument("--out", required=True, help="the PNG to write")
    ap.add_argument("--title", default="")
    args = ap.parse_args(argv)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_curves: matplotlib is missing (Debian: apt-get install python3-matplotlib; "
              "tools/setup.sh installs it)", file=sys.stderr)
        return 3
    labels = args.label + [pathlib.Path(s).stem for s in args.inputs[len(args.label):]]
    runs = [(label, load(s)) for label, s in zip(labels, args.inputs)]
    fig, axes = plt.subplots(3, 1, figsize=(7, 6.3), sharex=True, dpi=80)
    for ax, key in zip(axes, SERIES):
        for label, series in runs:
            if key not in series:
                continue
            steps, ys = series[key]
            finite = [(s, y) for s, y in zip(steps, ys) if math.isfinite(y)]
            if finite:
                ax.plot([s for s, _ in finite], [y for _, y in finite], label=label, lw=1.2)
        ax.set_ylabel({"loss": "loss", "grad_norm": "|grad|", "lr": "lr"}[key])
        ax.set_yscale("log")
        ax.grid(True, which="major", alpha=0.3)
    axes[0].legend(fontsize=8, loc="best")
    axes[-1].set_xlabel("step")
    if args.title:
        axes[0].set_title(args.title)
    fig.tight_layout()
    pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out)
    print(f"plot_curves: wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
