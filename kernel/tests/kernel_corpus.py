#!/usr/bin/python3
"""ctest notebook_kernel_corpus: cells as notebook users write them run in xgradlab as in g++.

  kernel_corpus.py --kernel build/release/kernel/xgradlab --library build/release/libgradlab.so \\
                   --include src [--cxx g++] kernel/tests/corpus.cells

THE CORPUS FILE: cells, each opened by a header line
  //%% main          statements (and variables): into main() of the program, in order
  //%% value         main, and its last line is an expression without ';' whose value the kernel
                     shows (execute_result); the program prints it as the kernel does (the
                     expression must be that whole last line)
  //%% decl          declarations (struct, template, function, using, #include): at file scope
  //%% global        variables that later decl cells use: at file scope too
  //%% error REGEX   must give an error reply whose "ename: evalue" (and the traceback's other
                     lines after it) matches REGEX; left out of the program (compile errors,
                     thrown exceptions, faults)
  //%% script        statements mixed with functions or classes, which no main() can hold: left
                     out of the program; its stdout must be the cell's lines that start with
                     "//> " (after that prefix), one per line
Text before the first header is a comment.

THE CHECK. Every cell runs in one kernel, in order, through the Jupyter protocol (Debian's
jupyter_client). The corpus is also turned into one C++ program (decl and global cells at file
scope, main and value cells into main(), each followed by a marker line) built with g++ against
the same libgradlab. For every cell: the kernel is alive afterwards; an error cell gives an error
reply that matches; any other cell gives an ok reply and its stdout (plus its value and a newline)
equals what the program printed for it (a script cell: its "//> " lines), compared with the
notebook rule of tools/run_notebooks.py (numbers within one unit of the last digit). stderr is
not compared.
Prints one line per cell and "kernel corpus: OK (N cells)"; exit 1 when any cell fails.
"""

import argparse
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tools"))
import run_notebooks  # noqa: E402  (kernelspec helper and the output comparison rule)

HEADER = re.compile(r"^//%%\s*(main|value|decl|global|error|script)\b\s*(.*)$")

# What the kernel's show_value does (kernel/xgradlab.cpp printer_code), for the program.
SHOW = r"""
#include <sstream>
#include <string>
#include <type_traits>
#include <typeinfo>
namespace corpus_detail {
template <class T, class = void> struct streamable : std::false_type {};
template <class T> struct streamable<T, std::void_t<decltype(std::declval<std::ostream&>()
    << std::declval<const T&>())>> : std::true_type {};
template <class T> void show_value(const T& v) {
  std::ostringstream os;
  os << std::boolalpha;
  using D = std::decay_t<T>;
  if constexpr (std::is_same_v<D, std::string>) os << '"' << v << '"';
  else if constexpr (std::is_same_v<D, const char*> || std::is_same_v<D, char*>) os << '"' << v << '"';
  else if constexpr (std::is_same_v<D, char>) os << '\'' << v << '\'';
  else if constexpr (streamable<T>::value) os << v;
  else os << "<object of type " << typeid(T).name() << ">";
  std::cout << os.str() << "\n";
}
template <class F> void show(F f) {
  if constexpr (std::is_void_v<decltype(f())>) f();
  else { decltype(auto) v = f(); show_value(v); }
}
}  // namespace corpus_detail
"""


class Cell:
    def __init__(self, number, kind, arg, line):
        self.number, self.kind, self.arg, self.line, self.code = number, kind, arg, line, ""


def parse(path):
    cells, current = [], None
    for lineno, line in enumerate(path.read_text().splitlines(keepends=True), 1):
        m = HEADER.match(line)
        if m:
            current = Cell(len(cells) + 1, m.group(1), m.group(2).strip(), lineno)
            cells.append(current)
        elif current is not None:
            current.code += line
    for c in cells:
        c.code = c.code.strip("\n")
        if not c.code.strip():
            sys.exit(f"{path}:{c.line}: cell {c.number} is empty; expected code after its header")
        if c.kind == "error" and not c.arg:
            sys.exit(f"{path}:{c.line}: cell {c.number}: '//%% error' needs a regex for the "
                     "error's 'ename: evalue' (hint: //%% error CompilationError)")
    if not cells:
        sys.exit(f"{path}: no cells; expected lines such as '//%% main' (see {__file__})")
    return cells


def split_value(code):
    """(prefix, expression): a value cell's expression is its last line."""
    lines = code.rstrip().split("\n")
    return "\n".join(lines[:-1]), lines[-1]


def program(cells):
    top, body = [], []
    for c in cells:
        if c.kind in ("decl", "global"):
            top.append(f"// cell {c.number}\n{c.code}\n")
        elif c.kind in ("main", "value"):
            code = c.code
            if c.kind == "value":
                prefix, expr = split_value(code)
                code = f"{prefix}\ncorpus_detail::show([&]() -> decltype(auto) {{ return ({expr}\n); }});"
            body.append(f"// cell {c.number}\n{code}\n"
                        f'std::cout << std::flush << "\\x1f" "{c.number}" "\\x1f\\n" << std::flush;\n')
    return ("#include <gradlab/gradlab.hpp>\n#include <iostream>\n" + SHOW + "\n".join(top) +
            "\nint main() {\n" + "\n".join(body) + "return 0;\n}\n")


def program_outputs(cells, args, work):
    src = work / "corpus_program.cpp"
    src.write_text(program(cells))
    exe = work / "corpus_program"
    lib = pathlib.Path(args.library).resolve()
    cmd = [args.cxx, "-std=c++17", "-O0", "-w", f"-I{args.include}", str(src), "-o", str(exe),
           str(lib), f"-Wl,-rpath,{lib.parent}", "-pthread"]
    t = time.monotonic()
    build = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if build.returncode != 0:
        print(build.stdout[-6000:])
        sys.exit(f"FAIL: the corpus program ({src}) does not build with {args.cxx}; a cell not "
                 "marked 'error' does not compile as C++ (the errors above name its '// cell N')")
    print(f"program built with {args.cxx} in {time.monotonic() - t:.1f} s")
    run = subprocess.run([str(exe)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         errors="replace", timeout=300)
    if run.returncode != 0:
        sys.exit(f"FAIL: the corpus program exited with {run.returncode}\n{run.stdout[-3000:]}"
                 f"\n{run.stderr[-3000:]}")
    outputs, pos = {}, 0
    for m in re.finditer("\x1f(\\d+)\x1f\n", run.stdout):
        outputs[int(m.group(1))] = run.stdout[pos:m.start()]
        pos = m.end()
    return outputs


def same(want, got):
    """The notebook rule: line by line, masked, numbers within one unit of the last digit."""
    w, g = want.splitlines(), got.splitlines()
    for k in range(max(len(w), len(g))):
        a = w[k] if k < len(w) else "<no line>"
        b = g[k] if k < len(g) else "<no line>"
        if a == b:
            continue
        if k < len(w) and k < len(g) and run_notebooks.line_matcher(run_notebooks.mask(a))(
                run_notebooks.mask(b)):
            continue
        return f"line {k + 1}: the program printed {a!r}, the kernel {b!r}"
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kernel", required=True)
    parser.add_argument("--library", required=True, help="libgradlab.so for the g++ program")
    parser.add_argument("--include", required=True, help="gradlab's src/ directory")
    parser.add_argument("--cxx", default="g++")
    parser.add_argument("corpus")
    args = parser.parse_args()
    cells = parse(pathlib.Path(args.corpus))
    work = pathlib.Path(tempfile.mkdtemp(prefix="gradlab-corpus-"))
    want = program_outputs(cells, args, work)

    run_notebooks.use_kernel(args.kernel)
    from jupyter_client.manager import KernelManager
    km = KernelManager(kernel_name=run_notebooks.KERNEL_NAME)
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=120)

    def execute(code, timeout=120):
        msg_id = kc.execute(code)
        out, result, error = "", None, None
        while True:
            m = kc.get_iopub_msg(timeout=timeout)
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            t, c = m["msg_type"], m["content"]
            if t == "status" and c["execution_state"] == "idle":
                break
            if t == "stream" and c["name"] == "stdout":
                out += c["text"]
            if t == "execute_result":
                result = c["data"]["text/plain"]
        while True:
            reply = kc.get_shell_msg(timeout=timeout)
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply["content"], out + ("" if result is None else result + "\n")

    failures = 0
    for c in cells:
        first = c.code.strip().splitlines()[0][:60]
        try:
            reply, got = execute(c.code)
        except Exception as e:  # noqa: BLE001  (a dead or stuck kernel: report, stop)
            print(f"FAIL: cell {c.number} (line {c.line}, {first!r}): no reply ({type(e).__name__}); "
                  f"kernel alive: {km.is_alive()}")
            failures += 1
            break
        problem = None
        if not km.is_alive():
            problem = "the kernel died"
        elif c.kind == "error":
            text = "\n".join(reply.get("traceback") or
                             [f"{reply.get('ename', '')}: {reply.get('evalue', '')}"])
            if reply["status"] != "error":
                problem = f"expected an error reply matching {c.arg!r}, got status {reply['status']}"
            elif not re.search(c.arg, text):
                problem = f"the error {text[:300]!r} does not match {c.arg!r}"
        elif reply["status"] != "ok":
            problem = f"error reply {reply.get('ename')}: {reply.get('evalue', '')[:400]}"
        elif c.kind == "script":
            expected = "".join(line[4:] + "\n" for line in c.code.splitlines() if line.startswith("//> "))
            d = same(expected, got)
            if d:
                problem = f"the kernel's output differs from the cell's '//> ' lines, {d}".replace(
                    "the program printed", "the cell expects")
        elif c.kind in ("main", "value") or got:
            d = same(want.get(c.number, ""), got)
            if d:
                problem = f"the kernel's output differs from the g++ program's, {d}"
        print(("ok:   " if problem is None else "FAIL: ") + f"cell {c.number} ({c.kind}, line "
              f"{c.line}) {first!r}" + ("" if problem is None else f": {problem}"), flush=True)
        failures += problem is not None
        if not km.is_alive():
            break
    km.shutdown_kernel(now=True)
    if failures:
        print(f"kernel corpus: {failures} of {len(cells)} cells FAILED")
        return 1
    print(f"kernel corpus: OK ({len(cells)} cells)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
