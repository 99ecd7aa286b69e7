#!/usr/bin/env python3
"""gradlab's event files read back by TensorBoard itself (PyPI package `tensorboard`).

  1. runs tb_fixture, which writes every kind of record SummaryWriter makes plus expected.json;
  2. loads each run with TensorBoard's EventAccumulator and compares every value: scalars (as
     float32, with steps and wall times), add_scalars' sub-runs, histograms (min, max, num, sum,
     sum_squares, bucket limits and counts), text, hparams (experiment, session start with each
     value and type, session end, metrics), the file names, and a run cut inside its last record
     (a killed writer: every complete record still loads);
  3. starts the TensorBoard server on 127.0.0.1 (a free port), reads the scalars back through its
     HTTP API within a bounded time, and stops it.

TensorBoard lives in the project's virtual environment (tools/setup.sh makes .venv/). Without it
the test prints why and exits 77 (ctest: skipped).

  tensorboard_reader.py --venv .venv --fixture build/.../tb_fixture --work /tmp/x
"""

import argparse
import json
import math
import os
import pathlib
import re
import socket
import struct
import subprocess
import sys
import time
import urllib.parse
import urllib.request

SKIP = 77


def venv_python(venv):
    return pathlib.Path(venv) / "bin" / "python"


def reexec_in_venv(args):
    """Runs this script under the venv's python (or returns SKIP with a message)."""
    py = venv_python(args.venv)
    if not py.exists():
        print(f"SKIP: no virtual environment at {args.venv} ({py} is missing); "
              f"run tools/setup.sh to create it with tensorboard")
        return SKIP
    probe = subprocess.run([str(py), "-c", "import tensorboard; print(tensorboard.__version__)"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        print(f"SKIP: {py} cannot import tensorboard ({probe.stderr.strip().splitlines()[-1:]}); "
              f"run tools/setup.sh")
        return SKIP
    env = dict(os.environ, GRADLAB_TB_IN_VENV="1")
    return subprocess.run([str(py), __file__] + sys.argv[1:], env=env).returncode


def f32(x):
    """x rounded to float32, as Summary.Value.simple_value stores it."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def value(v):
    return float(v) if isinstance(v, str) else v


class Checker:
    def __init__(self):
        self.failures, self.checked = [], 0

    def eq(self, got, want, what):
        self.checked += 1
        same = (got == want) or (isinstance(got, float) and isinstance(want, float)
                                 and math.isnan(got) and math.isnan(want))
        if not same:
            self.failures.append(f"{what}: got {got!r}, expected {want!r}")
        return same


def load(run_dir):
    from tensorboard.backend.event_processing import event_accumulator as ea
    acc = ea.EventAccumulator(str(run_dir), size_guidance={k: 0 for k in (
        ea.SCALARS, ea.HISTOGRAMS, ea.TENSORS, ea.COMPRESSED_HISTOGRAMS, ea.IMAGES, ea.AUDIO)})
    acc.Reload()
    return acc


def check_scalars(c, acc, tag, expected, what, exact_wall=True):
    try:
        events = acc.Scalars(tag)
    except KeyError:
        events = []
        c.eq(f"no scalars with tag {tag}", "scalars", what)
    c.eq(len(events), len(expected), f"{what}: number of scalars")
    for e, x in zip(events, expected):
        c.eq(e.step, x["step"], f"{what}: step")
        c.eq(e.value, f32(value(x["value"])), f"{what}: value at step {x['step']}")
        if exact_wall and "wall_time" in x:
            c.eq(e.wall_time, x["wall_time"], f"{what}: wall_time at step {x['step']}")


def check_reader(c, ex):
    logdir = pathlib.Path(ex["logdir"])
    name = pathlib.Path(ex["main_file"]).name
    c.eq(bool(re.fullmatch(r"events\.out\.tfevents\.\d{10}\.[^.]+(\.[^.]+)*\.\d+\.\d+", name)),
         True, f"file name {name} is events.out.tfevents.<time>.<host>.<pid>.<n>")

    # the raw events, through TensorBoard's file loader: the first is the version header, then
    # one event per add_scalar / add_histogram / add_text
    from tensorboard.backend.event_processing import event_file_loader
    events = list(event_file_loader.EventFileLoader(ex["main_file"]).Load())
    c.eq(events[0].file_version, "brain.Event:2", "the first event is the file_version header")
    c.eq(len(events), 1 + len(ex["scalars"]["loss/train"]) + len(ex["histograms"]) + 1,
         "number of events in the main file")
    acc = load(logdir)
    c.eq(acc.file_version, 2.0, "EventAccumulator's file_version")
    check_scalars(c, acc, "loss/train", ex["scalars"]["loss/train"], "add_scalar")

    for tag, h in ex["histograms"].items():
        try:
            events = acc.Histograms(tag)
        except KeyError:
            events = []
        if not c.eq(len(events), 1, f"histogram {tag}: one event"):
            continue
        hv, want = events[0].histogram_value, h["h"]
        c.eq(events[0].step, h["step"], f"histogram {tag}: step")
        for field in ("min", "max", "num", "sum", "sum_squares"):
            c.eq(getattr(hv, field), want[field], f"histogram {tag}: {field}")
        c.eq(list(hv.bucket_limit), want["bucket_limit"], f"histogram {tag}: bucket_limit")
        c.eq(list(hv.bucket), want["bucket"], f"histogram {tag}: bucket")
        c.eq(sum(hv.bucket), want["num"], f"histogram {tag}: the counts add up to num")

    from tensorboard.util import tensor_util
    t = ex["text"]
    try:
        tensors = acc.Tensors(t["tag"])
    except KeyError:
        tensors = []
    if c.eq(len(tensors), 1, "text: one event"):
        arr = tensor_util.make_ndarray(tensors[0].tensor_proto)
        c.eq(arr.shape, (1,), "text: a [1] string tensor")
        c.eq(arr[0].decode("utf-8"), t["text"], "text: the string")
        c.eq(tensors[0].step, t["step"], "text: step")
    c.eq(acc.PluginTagToContent("text").get(t["tag"]), b"", "text: plugin metadata 'text'")

    # add_scalars: one run per key
    for run, expected in ex["add_scalars"]["runs"].items():
        check_scalars(c, load(logdir / run), ex["add_scalars"]["tag"], expected,
                      f"add_scalars run {run}")

    # hparams, parsed with the hparams plugin's own protobuf classes
    from tensorboard.plugins.hparams import plugin_data_pb2, api_pb2
    hp = ex["hparams"]
    hacc = load(logdir / hp["run"])
    content = hacc.PluginTagToContent("hparams")
    c.eq(sorted(content), ["_hparams_/experiment", "_hparams_/session_end_info",
                           "_hparams_/session_start_info"], "hparams: the three tags")
    exp = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/experiment"]).experiment
    c.eq({i.name: i.type for i in exp.hparam_infos}, hp["types"], "hparams: experiment types")
    c.eq(sorted(m.name.tag for m in exp.metric_infos), sorted(hp["metrics"]),
         "hparams: experiment metrics")
    ssi = plugin_data_pb2.HParamsPluginData.FromString(
        content["_hparams_/session_start_info"]).session_start_info
    got = {}
    for k, v in ssi.hparams.items():
        kind = v.WhichOneof("kind")
        got[k] = getattr(v, kind)
    c.eq(got, hp["hparams"], "hparams: session start values")
    sei = plugin_data_pb2.HParamsPluginData.FromString(
        content["_hparams_/session_end_info"]).session_end_info
    c.eq(sei.status, api_pb2.STATUS_SUCCESS, "hparams: session end status")
    for tag, v in hp["metrics"].items():
        check_scalars(c, hacc, tag, [{"step": hp["step"], "value": v}], f"hparams metric {tag}")

    # a killed writer: the complete records load, the cut one is dropped
    k = ex["killed"]
    check_scalars(c, load(logdir / k["run"]), k["tag"], k["scalars"], "killed writer")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_server(c, ex, deadline_s=90):
    """tensorboard --logdir ... on 127.0.0.1; reads loss/train back over HTTP."""
    logdir, port = ex["logdir"], free_port()
    cmd = [sys.executable, "-m", "tensorboard.main", "--logdir", logdir, "--host", "127.0.0.1",
           "--port", str(port), "--load_fast", "false", "--reload_interval", "1"]
    log = open(pathlib.Path(logdir).parent / "tensorboard_server.log", "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    start = time.monotonic()
    query = urllib.parse.urlencode({"run": ".", "tag": "loss/train"})
    url = f"http://127.0.0.1:{port}/data/plugin/scalars/scalars?{query}"
    rows, last_error = None, None
    try:
        while time.monotonic() - start < deadline_s:
            if proc.poll() is not None:
                last_error = f"the server exited with status {proc.returncode}"
                break
            try:
                with urllib.request.urlopen(url, timeout=5) as r:
                    rows = json.loads(r.read().decode())
                if len(rows) == len(ex["scalars"]["loss/train"]):
                    break
            except Exception as e:  # not up yet, or the run not loaded yet
                last_error = str(e)
            time.sleep(0.5)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
    took = time.monotonic() - start
    if not c.eq(rows is not None, True, f"HTTP API answered within {deadline_s} s "
                f"(last error: {last_error})"):
        return
    print(f"tensorboard server on 127.0.0.1:{port}: {len(rows)} scalars in {took:.1f} s")
    want = ex["scalars"]["loss/train"]
    c.eq(len(rows), len(want), "HTTP: number of scalars")
    for (wall, step, v), x in zip(rows, want):
        c.eq(step, x["step"], "HTTP: step")
        c.eq(wall, x["wall_time"], "HTTP: wall_time")
        want_v = f32(value(x["value"]))
        # the HTTP API speaks JSON: NaN / Inf come as the strings "NaN" / "Infinity"
        got_v = float(v) if isinstance(v, str) else v
        c.eq(got_v, want_v, f"HTTP: value at step {x['step']}")
    c.eq(proc.returncode is not None, True, "the server was stopped")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--venv", required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--no-server", action="store_true")
    args = ap.parse_args()
    if os.environ.get("GRADLAB_TB_IN_VENV") != "1":
        return reexec_in_venv(args)

    import tensorboard
    work = pathlib.Path(args.work)
    subprocess.run([args.fixture, str(work)], check=True)
    ex = json.loads((work / "expected.json").read_text(encoding="utf-8"))
    c = Checker()
    check_reader(c, ex)
    if not args.no_server:
        check_server(c, ex)
    for f in c.failures:
        print("FAIL", f)
    print(f"tensorboard {tensorboard.__version__}: {c.checked - len(c.failures)} of {c.checked} "
          f"values read back equal")
    return 1 if c.failures or c.checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
