#!/usr/bin/python3
"""ctest notebook_kernel_display: xgradlab's rich display, completion, inspection and fast start.

  kernel_display.py --kernel build/release/kernel/xgradlab

Driven by Debian's jupyter_client, as Jupyter drives the kernel:
  * gradlab::display(x) sends display_data in order with the cell's stdout; a trailing tensor,
    graph_view, image_view or curve_plot is an execute_result with all its MIME types;
  * the SVG parses as XML and names the graph's nodes; each PNG is whole (signature, every
    chunk's CRC, IHDR size, the IDAT data inflating to exactly height rows) and has the size
    asked for;
  * complete_request: clang's completions of a namespace member, a member after `.` and `->`, a
    global of an earlier cell, with cursor_start / cursor_end in code points (a cell with
    non-ASCII text before the cursor);
  * inspect_request: a gradlab function's declaration and doc comment, a member through a
    variable, and found=false for an unknown name;
  * the precompiled prelude's traps: an inline variable of a header bound to a const&, and the
    cell after a JIT link error (both failed before their fixes);
  * fast start: the banner says the prelude was precompiled; with XGRADLAB_PCH=0, and with a
    broken PCH file, the kernel parses the headers instead and works. The start-up times are
    printed (bench/bench_kernel_start measures them; no time is asserted here).
Prints one line per check and "kernel display: OK" at the end; exit 1 on the first failure.
"""

import argparse
import base64
import os
import pathlib
import struct
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
import zlib

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tools"))
import run_notebooks  # noqa: E402  (kernelspec helper)


def png_problems(b64, width, height):
    """'' when the base64 text is a whole PNG of width x height, else what is wrong."""
    try:
        data = base64.b64decode(b64, validate=True)
    except Exception as e:  # noqa: BLE001
        return f"not base64: {e}"
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return "no PNG signature"
    at, idat, ihdr, end = 8, b"", None, False
    while at < len(data):
        if at + 8 > len(data):
            return "a truncated chunk header"
        (n,), kind = struct.unpack(">I", data[at:at + 4]), data[at + 4:at + 8]
        body, crc = data[at + 8:at + 8 + n], data[at + 8 + n:at + 12 + n]
        if len(crc) != 4 or struct.unpack(">I", crc)[0] != zlib.crc32(kind + body):
            return f"bad CRC in chunk {kind!r}"
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            end = True
        at += 12 + n
    if ihdr is None or not end:
        return "no IHDR or no IEND"
    w, h, depth, colour = ihdr[0], ihdr[1], ihdr[2], ihdr[3]
    if (w, h) != (width, height):
        return f"size {w}x{h}, expected {width}x{height}"
    channels = {0: 1, 2: 3, 4: 2, 6: 4}.get(colour)
    if channels is None or depth != 8:
        return f"unexpected colour type {colour} / depth {depth}"
    raw = zlib.decompress(idat)
    if len(raw) != h * (1 + w * channels):
        return f"IDAT inflates to {len(raw)} bytes, expected {h * (1 + w * channels)}"
    return ""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kernel", required=True)
    args = parser.parse_args()
    run_notebooks.use_kernel(args.kernel)
    from jupyter_client.manager import KernelManager

    state = {}

    def check(ok, what):
        print(("ok:   " if ok else "FAIL: ") + what, flush=True)
        if not ok:
            state["km"].shutdown_kernel(now=True)
            sys.exit(1)

    def start(env=None):
        saved = dict(os.environ)
        os.environ.update(env or {})
        km = KernelManager(kernel_name=run_notebooks.KERNEL_NAME)
        t0 = time.monotonic()
        km.start_kernel()
        os.environ.clear()
        os.environ.update(saved)
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=120)
        state["km"], state["kc"] = km, kc
        return time.monotonic() - t0, kc.kernel_info(reply=True)["content"]["banner"]

    def execute(code, timeout=60):
        kc = state["kc"]
        msg_id = kc.execute(code)
        outs = []
        while True:
            m = kc.get_iopub_msg(timeout=timeout)
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                break
            if m["msg_type"] in ("stream", "execute_result", "display_data", "error"):
                outs.append((m["msg_type"], m["content"]))
        while True:
            reply = kc.get_shell_msg(timeout=timeout)
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply["content"], outs

    def shell(request):
        kc = state["kc"]
        msg_id = request()
        while True:
            r = kc.get_shell_msg(timeout=60)
            if r["parent_header"].get("msg_id") == msg_id:
                return r["content"]

    seconds, banner = start()
    print(f"kernel ready in {seconds:.2f} s (precompiled prelude; jupyter_client's start + wait)")
    check("(precompiled)" in banner, f"the prelude is precompiled (banner: ...{banner[-60:]!r})")

    # ---- display -------------------------------------------------------------------------------
    r, outs = execute('auto x = gradlab::from_vector(std::vector<double>{1, 2, 3, 4}, {2, 2})'
                      '.requires_grad_(true);\nstd::cout << "before" << std::endl;\n'
                      'gradlab::display(x);\nstd::cout << "after" << std::endl;')
    kinds = [(t, c.get("text", "").strip()) for t, c in outs]
    check(r["status"] == "ok" and kinds == [("stream", "before"), ("display_data", ""),
                                             ("stream", "after")],
          f"display(x) is a display_data message between the text printed before and after ({kinds})")
    data = outs[1][1]["data"]
    check(data["text/plain"].startswith("tensor([[1., 2.],") and data["text/html"].count("<tr>") == 2
          and "<td>4</td>" in data["text/html"],
          "a tensor's bundle: text/plain (its str()) and text/html (a 2-row table of its values)")
    r, outs = execute("x")
    res = [c["data"] for t, c in outs if t == "execute_result"]
    check(len(res) == 1 and "text/html" in res[0] and res[0]["text/plain"].startswith("tensor("),
          "a trailing tensor is an execute_result with text/plain and text/html")
    r, outs = execute("auto y = (x * x).sum();\ngradlab::display(gradlab::graph_view(y));")
    svg = [c["data"] for t, c in outs if t == "display_data"]
    ok = len(svg) == 1 and "image/svg+xml" in svg[0]
    root = ET.fromstring(svg[0]["image/svg+xml"].encode()) if ok else None
    texts = " ".join(e.text or "" for e in root.iter()) if ok else ""
    check(ok and root.tag.endswith("svg") and "MulBackward0" in texts and "SumBackward0" in texts,
          "graph_view: image/svg+xml that parses as XML and names MulBackward0 and SumBackward0")
    r, outs = execute("gradlab::image_view(x, 4)")
    res = [c["data"] for t, c in outs if t == "execute_result"]
    bad = png_problems(res[0]["image/png"], 8, 8) if res and "image/png" in res[0] else "no image/png"
    check(bad == "" and res[0]["text/plain"] == "<image 2x2 grey, scale 4>",
          f"a trailing image_view: a whole 8x8 PNG ({bad or 'signature, CRCs, IHDR, IDAT'})")
    r, outs = execute('auto plot = gradlab::curve_plot({{"train", {3.0, 2.0, 1.5}, {}}, '
                      '{"val", {3.1, 2.6, 2.4}, {}}});\nplot.width = 300;\nplot.height = 180;\n'
                      "gradlab::display(plot);")
    res = [c["data"] for t, c in outs if t == "display_data"]
    bad = png_problems(res[0]["image/png"], 300, 180) if res and "image/png" in res[0] else "no image/png"
    check(bad == "" and "val: 3 points" in res[0]["text/plain"],
          f"curve_plot: a whole 300x180 PNG and a text summary ({bad or 'ok'})")
    r, outs = execute("gradlab::display(gradlab::image_view(gradlab::zeros({2, 1, 4, 4})));")
    check(r["status"] == "error" and r["ename"] == "gradlab::ShapeError" and
          "[H, W], [1, H, W]" in r["evalue"], "a batch given to image_view is a clear ShapeError")

    # ---- the precompiled prelude's traps (each failed before its fix) -------------------------------
    r, outs = execute("const gradlab::ScalarType& half_ref = gradlab::kFloat16;\n"
                      "std::cout << (half_ref == gradlab::kFloat16) << ' '"
                      " << std::max(0, std::numeric_limits<int>::digits) << std::endl;")
    check(r["status"] == "ok" and "".join(c["text"] for t, c in outs if t == "stream") == "1 31\n",
          f"an inline variable of a header bound to a const& links (gradlab::kFloat16) ({r.get('evalue', '')[:90]})")
    r, outs = execute("void declared_only();\ndeclared_only();")
    check(r["status"] == "error" and "Symbols not found" in r["evalue"],
          "a call of a function that is declared but never defined: a JIT link error reply")
    r, outs = execute('std::cout << "next" << std::endl;')
    check(r["status"] == "ok" and "".join(c["text"] for t, c in outs if t == "stream") == "next\n",
          f"the cell after a JIT link error runs ({r.get('evalue', '')[:90]})")

    # ---- completion -----------------------------------------------------------------------------
    def complete(code, cursor=None):
        cursor = len(code) if cursor is None else cursor
        return shell(lambda: state["kc"].complete(code, cursor))
    execute("struct Probe { int alpha = 1; double beta() const { return 2; } };\nProbe probe;\n"
            "auto probe_ptr = std::make_shared<Probe>();\nint my_counter = 0;")
    c = complete("gradlab::ze")
    check(c["status"] == "ok" and "zeros" in c["matches"] and "zeros_like" in c["matches"] and
          c["cursor_start"] == 9 and c["cursor_end"] == 11,
          f"complete 'gradlab::ze': zeros, zeros_like, replacing [9, 11) ({c['matches'][:5]})")
    c = complete("y.bac")
    check(c["matches"] == ["backward"] and c["cursor_start"] == 2,
          f"complete 'y.bac' (a tensor of an earlier cell): backward ({c['matches']})")
    c = complete("probe.")
    check({"alpha", "beta"} <= set(c["matches"]) and c["cursor_start"] == 6,
          f"complete 'probe.': a struct's field and method ({c['matches']})")
    c = complete("probe_ptr->al")
    check("alpha" in c["matches"], f"complete 'probe_ptr->al' through a shared_ptr ({c['matches']})")
    code = "// π ≈ 3.14\nmy_coun"
    c = complete(code)
    check(c["matches"] == ["my_counter"] and c["cursor_end"] == len(code) and
          c["cursor_start"] == len(code) - len("my_coun"),
          f"complete after non-ASCII text: cursor positions in code points ({c})")
    c = complete("gradlab::testing::gradc")
    check("gradcheck" in c["matches"], f"complete 'gradlab::testing::gradc' ({c['matches']})")

    # ---- inspection -----------------------------------------------------------------------------
    i = shell(lambda: state["kc"].inspect("gradlab::testing::gradcheck(", 28))
    t = i["data"].get("text/plain", "")
    check(i["status"] == "ok" and i["found"] and "GradcheckReport gradcheck(" in t and
          "central differences" in t and "gradcheck.hpp:" in t,
          "inspect gradcheck: its declaration, its doc comment and where it is declared")
    i = shell(lambda: state["kc"].inspect("y.backward", 10))
    t = i["data"].get("text/plain", "")
    check(i["found"] and "void backward(" in t and "Backpropagates" in t,
          "inspect 'y.backward': the member of the variable's class, with its doc comment")
    i = shell(lambda: state["kc"].inspect("no_such_name_here", 5))
    check(i["status"] == "ok" and not i["found"], "inspect an unknown name: found is false")
    r, outs = execute("my_counter + 1")
    res = [c["data"]["text/plain"] for t, c in outs if t == "execute_result"]
    check(res == ["1"], "after completion and inspection the kernel's state is unchanged")
    state["km"].shutdown_kernel(now=True)

    # ---- without the precompiled prelude ----------------------------------------------------------
    broken = pathlib.Path(tempfile.mkdtemp(prefix="xgradlab-pch-")) / "broken.pch"
    broken.write_bytes(b"not a precompiled header")
    for env, what in (({"XGRADLAB_PCH": "0"}, "XGRADLAB_PCH=0"),
                      ({"XGRADLAB_PCH": str(broken)}, "a broken PCH file")):
        seconds, banner = start(env)
        r, outs = execute("gradlab::ones({3}).sum().item<double>()")
        res = [c["data"]["text/plain"] for t, c in outs if t == "execute_result"]
        check("(parsed)" in banner and res == ["3"],
              f"{what}: the kernel parses the headers instead ({seconds:.2f} s) and works")
        state["km"].shutdown_kernel(now=True)
    print("kernel display: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
