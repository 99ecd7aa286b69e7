#!/usr/bin/python3
"""Run gradlab's notebooks through a real Jupyter kernel, and check or refill their outputs.

  tools/run_notebooks.py notebooks/07_training_loop.ipynb            # check (what CI does)
  tools/run_notebooks.py --update notebooks/12_out_of_memory.ipynb   # refill stored outputs
  tools/run_notebooks.py --kernel build/release/kernel/xgradlab notebooks/*.ipynb

Each notebook runs in a fresh kernel (kernelspec xcpp17), driven by Debian's nbclient /
jupyter_client over the Jupyter protocol, every code cell in order; no cell is skipped.

THE CHECK RULE (without --update)
  * Every code cell runs without an error output, except a cell tagged `raises-exception`
    (nbclient's tag), which must end in an error raised while it runs (a C++ exception); a
    cell that does not compile (CompilationError) fails either way.
  * Each code cell's stdout (its stream outputs named stdout, joined) and the text/plain of its
    execute_result must equal the stored ones, line by line, after masking both with the rule of
    tools/check_lesson_readmes.py (timings such as "12.3 ms" -> "<t> ms", rates, speed-ups,
    worker / thread ids, 0x addresses, the directory part of absolute paths), its numbers
    compared as that rule compares them (integers equal, decimals within one unit of the last
    stored digit plus a relative 5e-5). A cell with output
    but none stored fails too: stored outputs are part of the notebook. stderr is not compared.
  * Rich outputs (display_data from gradlab::display, an execute_result bundle): each cell must
    show the same MIME types, in the same order, as stored, and their text/plain must match as
    above. Pictures are checked for being whole, not compared bit for bit (cairo's and
    Graphviz's versions and fonts move pixels): an image/png must be base64 of a PNG (its
    signature), an image/svg+xml must parse as an <svg> XML document.
  * Exit status 0 when every notebook passes; 1 otherwise, naming the notebook, the cell and
    the first differing line.

--update writes the fresh outputs into the notebook (atomically: a temporary file renamed over
it), after the same error rule: a notebook whose cells fail is not written.

--kernel PATH uses that xgradlab executable through a temporary kernelspec named xcpp17; without
it, build/release/kernel/xgradlab when it exists, else the installed xcpp17 kernelspec.
Use Debian's /usr/bin/python3 (nbclient and jupyter_client are Debian packages).
"""

import argparse
import importlib.util
import json
import os
import pathlib
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
KERNEL_NAME = "xcpp17"


def load_checker():
    spec = importlib.util.spec_from_file_location("check_lesson_readmes",
                                                  ROOT / "tools" / "check_lesson_readmes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_checker = load_checker()
mask, line_matcher = _checker.mask, _checker.line_matcher


def use_kernel(path):
    """A temporary JUPYTER_PATH whose kernels/xcpp17 runs `path` (before jupyter_client looks)."""
    home = pathlib.Path(tempfile.mkdtemp(prefix="gradlab-kernelspec-"))
    spec_dir = home / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True)
    spec = {"argv": [str(pathlib.Path(path).resolve()), "-f", "{connection_file}"],
            "display_name": "C++17 (gradlab, clang 19)", "language": "C++17"}
    (spec_dir / "kernel.json").write_text(json.dumps(spec, indent=1))
    os.environ["JUPYTER_PATH"] = str(home) + os.pathsep + os.environ.get("JUPYTER_PATH", "")


def cell_text(outputs):
    """(stdout, execute_result text/plain, error or None) of a cell's outputs."""
    out, result, error = [], [], None
    for o in outputs:
        kind = o.get("output_type")
        if kind == "stream" and o.get("name") == "stdout":
            out.append(o.get("text", ""))
        elif kind == "execute_result":
            text = o.get("data", {}).get("text/plain", "")
            result.append(text if isinstance(text, str) else "".join(text))
        elif kind == "error":
            error = f'{o.get("ename")}: {o.get("evalue")}'
    join = lambda parts: "".join("".join(p) if isinstance(p, list) else p for p in parts)
    return join(out), join(result), error


def rich_outputs(outputs):
    """[(output_type, sorted MIME types, text/plain of a display_data)] of a cell's bundles
    that carry more than text/plain, and the problems of their pictures."""
    import base64
    import xml.etree.ElementTree as ET
    shown, problems = [], []
    for o in outputs:
        kind, data = o.get("output_type"), o.get("data", {})
        if kind not in ("display_data", "execute_result") or set(data) <= {"text/plain"}:
            continue
        text = data.get("text/plain", "")
        text = text if isinstance(text, str) else "".join(text)
        shown.append((kind, sorted(data), text if kind == "display_data" else ""))
        png = data.get("image/png")
        if png is not None:
            try:
                ok = base64.b64decode("".join(png), validate=True)[:8] == b"\x89PNG\r\n\x1a\n"
            except ValueError:
                ok = False
            if not ok:
                problems.append("an image/png that is not base64 of a PNG")
        svg = data.get("image/svg+xml")
        if svg is not None:
            try:
                ok = ET.fromstring("".join(svg).encode()).tag.endswith("svg")
            except ET.ParseError:
                ok = False
            if not ok:
                problems.append("an image/svg+xml that is not an <svg> document")
    return shown, problems


def first_mismatch(stored, fresh):
    """None when the masked texts agree, else a message with the first differing line."""
    a = [mask(line) for line in stored.splitlines()]
    b = [mask(line) for line in fresh.splitlines()]
    for i in range(max(len(a), len(b))):
        want = a[i] if i < len(a) else "<no line>"
        got = b[i] if i < len(b) else "<no line>"
        if want != got and not (i < len(a) and i < len(b) and line_matcher(want)(got)):
            return f"line {i + 1}: stored {want!r}, got {got!r}"
    return None


def run_notebook(path, timeout):
    import nbclient
    import nbformat
    nb = nbformat.read(str(path), as_version=4)
    stored = [(c, cell_text(c.get("outputs", []))) for c in nb.cells if c.cell_type == "code"]
    fresh_nb = nbformat.read(str(path), as_version=4)
    for c in fresh_nb.cells:
        if c.cell_type == "code":
            c.outputs = []
            c.execution_count = None
    client = nbclient.NotebookClient(fresh_nb, timeout=timeout, kernel_name=KERNEL_NAME,
                                     allow_errors=True, record_timing=False,
                                     resources={"metadata": {"path": str(path.parent.resolve())}})
    start = time.monotonic()
    client.execute()
    seconds = time.monotonic() - start
    return nb, stored, fresh_nb, seconds


def check(path, fresh_nb, stored, update):
    """Failure messages for one executed notebook."""
    problems = []
    code_cells = [c for c in fresh_nb.cells if c.cell_type == "code"]
    if not code_cells:
        problems.append("no code cell")
    for index, (cell, (old, _)) in enumerate(zip(code_cells, stored), start=1):
        out, result, error = cell_text(cell.outputs)
        expects_error = "raises-exception" in cell.get("metadata", {}).get("tags", [])
        where = f"code cell {index} ({cell.source.strip().splitlines()[0][:60] if cell.source.strip() else 'empty'})"
        if error and not expects_error:
            problems.append(f"{where}: raised {error}")
        if expects_error and not error:
            problems.append(f"{where}: tagged raises-exception but ran without an error")
        if expects_error and error and error.startswith("CompilationError"):
            problems.append(f"{where}: tagged raises-exception but did not compile: {error}")
        shown, bad_pictures = rich_outputs(cell.outputs)
        problems += [f"{where}: {p}" for p in bad_pictures]
        if update:
            continue
        old_out, old_result, _ = cell_text(old.get("outputs", []))
        for what, a, b in (("stdout", old_out, out), ("value", old_result, result)):
            diff = first_mismatch(a, b)
            if diff:
                problems.append(f"{where}: {what} differs from the stored output, {diff}")
        old_shown, _ = rich_outputs(old.get("outputs", []))
        if [s[:2] for s in old_shown] != [s[:2] for s in shown]:
            problems.append(f"{where}: rich outputs differ: stored {[s[:2] for s in old_shown]}, "
                            f"got {[s[:2] for s in shown]}")
        else:
            for (_, mimes, a), (_, _, b) in zip(old_shown, shown):
                diff = first_mismatch(a, b)
                if diff:
                    problems.append(f"{where}: the text/plain of a {'/'.join(mimes)} display "
                                    f"differs, {diff}")
    return problems


def write_atomically(path, nb):
    import nbformat
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        nbformat.write(nb, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("notebooks", nargs="+", type=pathlib.Path)
    parser.add_argument("--update", action="store_true", help="refill the stored outputs")
    parser.add_argument("--kernel", help="the xgradlab executable to run")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per cell")
    args = parser.parse_args()

    kernel = args.kernel
    if kernel is None and (ROOT / "build/release/kernel/xgradlab").exists():
        kernel = ROOT / "build/release/kernel/xgradlab"
    if kernel is not None:
        if not pathlib.Path(kernel).exists():
            print(f"run_notebooks: no kernel at {kernel}; build it: cmake --build build/release "
                  "--target xgradlab", file=sys.stderr)
            return 1
        use_kernel(kernel)
    try:
        import nbclient  # noqa: F401
        import nbformat  # noqa: F401
    except ImportError as e:
        print(f"run_notebooks: {e}; install python3-nbclient python3-nbformat "
              "(tools/setup.sh) and run with /usr/bin/python3", file=sys.stderr)
        return 1

    failed = 0
    for path in args.notebooks:
        try:
            nb, stored, fresh_nb, seconds = run_notebook(path, args.timeout)
        except Exception as e:  # a dead kernel, a timeout: the notebook fails, with the reason
            print(f"FAIL {path}: the run stopped: {type(e).__name__}: {e}")
            failed += 1
            continue
        problems = check(path, fresh_nb, stored, args.update)
        if problems:
            failed += 1
            print(f"FAIL {path} ({seconds:.1f} s)")
            for p in problems:
                print(f"  {p}")
            continue
        if args.update:
            write_atomically(path, fresh_nb)
            print(f"updated {path} ({seconds:.1f} s)")
        else:
            cells = sum(1 for c in fresh_nb.cells if c.cell_type == "code")
            print(f"ok {path}: {cells} code cells match their stored outputs ({seconds:.1f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
