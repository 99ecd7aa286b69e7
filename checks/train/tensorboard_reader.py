#!/usr/bin/env python3
"""gradlab's event files read back by TensorBoard itself (PyPI package `tensorboard`).

  1. runs tb_fixture, which writes every kind of record SummaryWriter makes plus expected.json;
  2. loads each run with TensorBoard's EventAccumulator and compares every value: scalars (as
     float32, with steps and wall times), add_scalars' sub-runs, histograms (min, max, num, sum,
     sum_squares, bucket limits and counts), text, images (add_image: each PNG decoded by
     Pillow, every pixel compared with the values written, in CHW, HWC and HW layouts), the
     graph (add_graph: every node's name, op, inputs and shapes in the GraphDef), hparams (experiment, session start with each
     value and type, session end, metrics), the file names, and a run cut inside its last record
     (a killed writer: every complete record still loads);
  3. plants two faults and requires the same checks to catch them: an event file whose image
     has one pixel off by one, and a GraphDef with one edge missing;
  4. starts the TensorBoard server on 127.0.0.1 (a free port), reads the scalars, the graph's node
     names and the image tags back through its HTTP API within a bounded time, and stops it.

TensorBoard (and Pillow) live in the project's virtual environment (tools/setup.sh makes .venv/).
Without them the test prints why and exits 77 (ctest: skipped).

  tensorboard_reader.py --venv .venv --fixture build/.../tb_fixture --work /tmp/x
"""

import argparse
import json
import math
import os
import pathlib
import re
import shutil
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
    probe = subprocess.run([str(py), "-c", "import tensorboard, PIL"], capture_output=True,
                           text=True)
    if probe.returncode != 0:
        print(f"SKIP: {py} cannot import tensorboard and PIL (pillow, to decode add_image's PNGs) "
              f"({probe.stderr.strip().splitlines()[-1:]}); run tools/setup.sh")
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


def expected_pixels(img):
    """HWC rows of pixel tuples from the values add_image got, in their own layout (CHW, HWC,
    HW): a float v becomes floor(255 v + 0.5), a uint8 stays."""
    shape, fmt, vals = img["shape"], img["format"], img["values"]
    dims = dict(zip(fmt, shape))
    h, w, ch = dims["H"], dims["W"], dims.get("C", 1)

    def at(y, x, k):
        idx = {"CHW": (k * h + y) * w + x, "HWC": (y * w + x) * ch + k, "HW": y * w + x}[fmt]
        v = vals[idx]
        return int(v) if img["uint8"] else int(math.floor(v * 255 + 0.5))
    return h, w, ch, [[tuple(at(y, x, k) for k in range(ch)) for x in range(w)] for y in range(h)]


def check_images(c, acc, images, what="image"):
    import io
    from PIL import Image
    for tag, img in images.items():
        try:
            events = acc.Images(tag)
        except KeyError:
            events = []
        if not c.eq(len(events), 1, f"{what} {tag}: one event"):
            continue
        e = events[0]
        h, w, ch, want = expected_pixels(img)
        c.eq(e.step, img["step"], f"{what} {tag}: step")
        c.eq((e.height, e.width), (h, w), f"{what} {tag}: height, width")
        png = Image.open(io.BytesIO(e.encoded_image_string))
        c.eq(png.format, "PNG", f"{what} {tag}: a PNG")
        c.eq(png.mode, {1: "L", 3: "RGB", 4: "RGBA"}[ch], f"{what} {tag}: PIL mode")
        c.eq(png.size, (w, h), f"{what} {tag}: PIL size")
        px = png.load()
        got = [[px[x, y] if ch > 1 else (px[x, y],) for x in range(w)] for y in range(h)]
        bad = [(y, x, got[y][x], want[y][x]) for y in range(h) for x in range(w)
               if got[y][x] != want[y][x]]
        c.eq(bad[:3], [], f"{what} {tag}: pixels differ (y, x, got, expected), {len(bad)} in all")


def image_colorspaces(event_file):
    from tensorboard.backend.event_processing import event_file_loader
    out = {}
    # the legacy loader: the raw Summary.Value.image (EventFileLoader migrates it to a tensor)
    for ev in event_file_loader.LegacyEventFileLoader(event_file).Load():
        for v in ev.summary.value:
            if v.HasField("image"):
                out[v.tag] = v.image.colorspace
    return out


# The add_graph model of tb_fixture: encoder = Sequential(Linear(4, 3), Tanh()), head =
# Linear(3, 2), then sigmoid in the module's own forward, on an input [5, 4].
# name -> (op, inputs in the op's argument order, output shapes)
EXPECTED_GRAPH = {
    "input": ("IO Node", [], [[5, 4]]),
    "encoder.0.weight": ("Parameter", [], [[3, 4]]),
    "encoder.0.bias": ("Parameter", [], [[3]]),
    "head.weight": ("Parameter", [], [[2, 3]]),
    "head.bias": ("Parameter", [], [[2]]),
    "encoder/0/AddmmBackward0": ("AddmmBackward0", ["input", "encoder.0.weight", "encoder.0.bias"],
                                 [[5, 3]]),
    "encoder/1/TanhBackward0": ("TanhBackward0", ["encoder/0/AddmmBackward0"], [[5, 3]]),
    "head/AddmmBackward0": ("AddmmBackward0", ["encoder/1/TanhBackward0", "head.weight",
                                               "head.bias"], [[5, 2]]),
    "SigmoidBackward0": ("SigmoidBackward0", ["head/AddmmBackward0"], [[5, 2]]),
    "output": ("IO Node", ["SigmoidBackward0"], [[5, 2]]),
}


def check_graph(c, graph, what="graph"):
    if not c.eq(graph is not None, True, f"{what}: a GraphDef"):
        return
    got = {}
    for n in graph.node:
        shapes = [[d.size for d in s.dim] for s in n.attr["_output_shapes"].list.shape]
        got[n.name] = (n.op, list(n.input), shapes)
    c.eq(sorted(got), sorted(EXPECTED_GRAPH), f"{what}: node names")
    for name, want in EXPECTED_GRAPH.items():
        if name in got:
            c.eq(got[name], want, f"{what}: node {name} (op, inputs, shapes)")
    names = set(got)
    dangling = [(n, i) for n, (_, ins, _) in got.items() for i in ins if i not in names]
    c.eq(dangling, [], f"{what}: every input names a node")
    sites = {n.name: n.attr["site"].s.decode() for n in graph.node if "site" in n.attr}
    c.eq("tb_fixture.cpp" in sites.get("SigmoidBackward0", ""), True,
         f"{what}: the sigmoid's site names tb_fixture.cpp (got {sites.get('SigmoidBackward0')!r})")


def planted(c, ex, work):
    """The image and graph checks must fail on a file with one pixel off by one and on a
    GraphDef with one edge missing (both written by TensorBoard's own EventFileWriter)."""
    import io
    from PIL import Image
    from tensorboard.backend.event_processing import event_file_loader
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
    bad_img, bad_graph = work / "planted_image", work / "planted_graph"
    for d in (bad_img, bad_graph):
        shutil.rmtree(d, ignore_errors=True)
    wi = EventFileWriter(str(bad_img))
    for ev in event_file_loader.LegacyEventFileLoader(ex["main_file"]).Load():
        for v in ev.summary.value:
            if v.tag == "images/rgb":
                im = Image.open(io.BytesIO(v.image.encoded_image_string)).convert("RGB")
                r, g, b = im.getpixel((3, 2))
                im.putpixel((3, 2), ((r + 1) % 256, g, b))
                buf = io.BytesIO()
                im.save(buf, format="PNG")
                v.image.encoded_image_string = buf.getvalue()
        if ev.HasField("summary"):
            wi.add_event(ev)
    wi.close()
    ci = Checker()
    check_images(ci, load(bad_img), {"images/rgb": ex["images"]["images/rgb"]}, "planted image")
    c.eq(len(ci.failures), 1, "planted: one pixel off by one fails exactly the pixel check "
         f"({ci.failures})")

    from tensorboard.compat.proto import event_pb2, graph_pb2
    g = load(pathlib.Path(ex["logdir"]) / ex["graph"]["run"]).Graph()
    for n in g.node:
        if n.name == "head/AddmmBackward0":
            del n.input[2]  # the bias edge
    wg = EventFileWriter(str(bad_graph))
    wg.add_event(event_pb2.Event(wall_time=time.time(), graph_def=g.SerializeToString()))
    wg.close()
    cg = Checker()
    check_graph(cg, load(bad_graph).Graph(), "planted graph")
    c.eq(len(cg.failures), 1, f"planted: a missing edge fails the graph check ({cg.failures})")


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
    c.eq(len(events), 1 + len(ex["scalars"]["loss/train"]) + len(ex["histograms"]) + 1 +
         len(ex["images"]),
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

    check_images(c, acc, ex["images"])
    c.eq(image_colorspaces(ex["main_file"]),
         {t: dict(zip(i["format"], i["shape"])).get("C", 1) for t, i in ex["images"].items()},
         "image: colorspace = channels")
    check_graph(c, load(logdir / ex["graph"]["run"]).Graph())

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


def served_graph_and_images(port, ex, deadline):
    """What the Graphs and Images tabs get from the server: their HTTP API, polled until
    everything is loaded or the deadline passes."""
    base = f"http://127.0.0.1:{port}/data/plugin"
    run = ex["graph"]["run"]
    got = {}
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base}/graphs/info", timeout=5) as r:
                got["graph run"] = json.loads(r.read().decode()).get(run, {}).get("run_graph")
            q = urllib.parse.urlencode({"run": run, "conceptual": "false"})
            with urllib.request.urlopen(f"{base}/graphs/graph?{q}", timeout=5) as r:
                got["graph nodes"] = sorted(re.findall(r'^  name: "([^"]*)"$', r.read().decode(),
                                                       re.M))
            with urllib.request.urlopen(f"{base}/images/tags", timeout=5) as r:
                got["image tags"] = sorted(json.loads(r.read().decode()).get(".", {}))
            if got["graph run"] and got["image tags"] == sorted(ex["images"]):
                break
        except Exception:  # a run not loaded yet
            pass
        time.sleep(0.5)
    return got


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
    rows, last_error, served = None, None, {}
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
        if rows is not None:
            served = served_graph_and_images(port, ex, start + deadline_s)
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
    c.eq(served.get("graph run"), True, "HTTP graphs/info: the run 'graph' has a graph")
    c.eq(served.get("graph nodes"), sorted(EXPECTED_GRAPH), "HTTP graphs/graph: the node names")
    c.eq(served.get("image tags"), sorted(ex["images"]), "HTTP images/tags: the image tags")
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
    planted(c, ex, work)
    if not args.no_server:
        check_server(c, ex)
    for f in c.failures:
        print("FAIL", f)
    print(f"tensorboard {tensorboard.__version__}: {c.checked - len(c.failures)} of {c.checked} "
          f"values read back equal")
    return 1 if c.failures or c.checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
