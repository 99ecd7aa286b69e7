#!/usr/bin/env python3
"""Checks that gradlab's layers point one way (docs/layers.md; /DESIGN.md's order).

Every folder of src/gradlab has a rank; a file may include its own folder and folders of a lower
rank only. Bottom up (the same table is in README.md and README.zh-CN.md, "Layers point one way";
`--doc FILE` checks that FILE's table says the same):

    0  core
    1  backend
    2  autograd
    3  ops
    4  testing  nn  data  jit
    5  optim  io  distributed
    6  amp  train  diagnose  onnx  distributed_optim
    7  display
    top gradlab.hpp, testing.hpp (umbrella headers: they may include anything, nothing includes
        them)

Rejected, each printed as `file:line: ...` (exit 1 when there is one):
  - an include of a higher rank ("includes ... upward");
  - an include of another folder of the same rank ("sideways");
  - a folder without a rank (a new folder gets one here and in docs/layers.md);
  - a compiler-internal header (<cxxabi.h>, <bits/...>, <ext/...>) included by a header: every
    .hpp is installed, so its includes are public; such includes belong in a .cpp;
  - a machinery header reached from the umbrella gradlab.hpp, the LibTorch-like API: the op
    structs' recording and traits (ops/op.hpp, ops/op_traits.hpp, ops/common.hpp, ops/internal/),
    the tracer's hook (ops/trace_hook.hpp), the kernels (backend/) and the test machinery
    (testing/, whose umbrella is testing.hpp);
  - a cycle: between folders (which the two rules above already exclude, reported as such so
    the message names the loop), or between files (a.hpp -> b.hpp -> a.hpp, also inside a folder).

    python3 tools/check_layers.py [src/gradlab]
    python3 tools/check_layers.py --doc README.md [--doc README.zh-CN.md]
"""
import pathlib
import re
import sys

RANKS = [
    ["core"],
    ["backend"],
    ["autograd"],
    ["ops"],
    ["testing", "nn", "data", "jit"],
    ["optim", "io", "distributed"],
    ["amp", "train", "diagnose", "onnx", "distributed_optim"],
    ["display"],
]
RANK = {folder: r for r, folders in enumerate(RANKS) for folder in folders}
TOP = len(RANKS)  # the umbrella headers directly in src/gradlab/
SOURCES = {".hpp", ".cpp", ".cuh", ".cu"}

# Headers gradlab.hpp must not reach, even through other headers (see the docstring).
MACHINERY = re.compile(r"^(ops/(op|op_traits|common|trace_hook)\.hpp|ops/internal/.*|backend/.*|testing/.*)$")

INCLUDE = re.compile(r'^\s*#\s*include\s+["<]gradlab/([^">]+)[">]')
COMPILER_INTERNAL = re.compile(r'^\s*#\s*include\s+<(cxxabi\.h|bits/[^>]*|ext/[^>]*)>')


def folder_of(rel):
    """'nn/module.hpp' -> 'nn'; 'gradlab.hpp' -> '' (the top)."""
    parts = pathlib.PurePosixPath(rel).parts
    return parts[0] if len(parts) > 1 else ""


def rank(folder):
    return TOP if folder == "" else RANK.get(folder)


def strongly_connected(graph):
    """Tarjan's algorithm; returns the components with more than one node, or a self-loop."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph.get(v, ()):
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def loop_in(comp, graph):
    """One closed walk through a component, as a list of nodes (first == last)."""
    members = set(comp)
    start = comp[0]
    # Breadth-first from start back to start inside the component.
    prev = {}
    frontier = [start]
    seen = {start}
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph.get(v, ())):
                if w not in members:
                    continue
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(prev[path[-1]])
                    return [start] + path[::-1][1:] + [start] if len(path) > 1 else [start, start]
                if w not in seen:
                    seen.add(w)
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return comp + [comp[0]]


DOC_ROW = re.compile(r"^\|\s*(\d+|top)\s*\|\s*([a-z_.]+(?:\s*,\s*[a-z_.]+)*)\s*\|\s*$")


def check_doc(doc):
    """The `| rank | folders |` table of a doc against RANKS; returns the problems."""
    rows = {}
    for n, line in enumerate(pathlib.Path(doc).read_text(encoding="utf-8").splitlines(), 1):
        m = DOC_ROW.match(line)
        if m and m.group(1) != "top":
            rows[int(m.group(1))] = ([f.strip() for f in m.group(2).split(",")], n)
    bad = []
    for r, folders in enumerate(RANKS):
        got = rows.get(r)
        if got is None:
            bad.append(f"{doc}: no row for rank {r} ({', '.join(folders)})")
        elif sorted(got[0]) != sorted(folders):
            bad.append(f"{doc}:{got[1]}: rank {r} lists {', '.join(got[0])}; "
                       f"tools/check_layers.py has {', '.join(folders)}")
    for r in sorted(set(rows) - set(range(len(RANKS)))):
        bad.append(f"{doc}:{rows[r][1]}: rank {r} is not in tools/check_layers.py")
    return bad


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--doc":
        docs = sys.argv[2::2]
        bad = [b for d in docs for b in check_doc(d)]
        for b in bad:
            print(b)
        print(f"check_layers: {len(docs)} docs, {len(bad)} rank tables differ from the script")
        return 1 if bad else 0
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "src/gradlab")
    bad = []
    files = {}  # rel path -> list of (line number, included rel path, line text)
    for path in sorted(root.rglob("*")):
        if path.suffix not in SOURCES or not path.is_file():
            continue
        rel = path.relative_to(root).as_posix()
        incs = []
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if path.suffix == ".hpp" and COMPILER_INTERNAL.match(line):
                bad.append(f"{root / rel}:{n}: a public header includes the compiler-internal "
                           f"{line.strip()[len('#include '):]}; hint: include it in the .cpp")
            m = INCLUDE.match(line)
            if m:
                incs.append((n, m.group(1), line.strip()))
        files[rel] = incs

    unranked = set()
    folder_edges = {}  # (from folder, to folder) -> first "file:line"
    for rel, incs in files.items():
        src = folder_of(rel)
        if rank(src) is None:
            unranked.add(src)
            continue
        for n, target, text in incs:
            dst = folder_of(target)
            where = f"{root / rel}:{n}"
            if rank(dst) is None:
                unranked.add(dst)
                continue
            if dst != src:
                folder_edges.setdefault((src or "gradlab.hpp", dst or "gradlab.hpp"), where)
            if dst == src:
                continue
            if rank(dst) > rank(src):
                bad.append(f"{where}: {src}/ (rank {rank(src)}) includes {dst or 'the umbrella '}"
                           f"{'/' if dst else 'header'} (rank {rank(dst)}) upward ({text})")
            elif rank(dst) == rank(src):
                bad.append(f"{where}: {src}/ includes {dst}/ sideways (both rank {rank(src)}) ({text})")
    for f in sorted(unranked):
        bad.append(f"{root / f}: folder {f}/ has no rank; hint: give it one in tools/check_layers.py "
                   "and docs/layers.md")

    # Cycles between folders.
    fgraph = {}
    for (a, b) in folder_edges:
        fgraph.setdefault(a, set()).add(b)
    for comp in strongly_connected(fgraph):
        loop = loop_in(comp, fgraph)
        hops = ", ".join(f"{a}/ -> {b}/ at {folder_edges[(a, b)]}" for a, b in zip(loop, loop[1:]))
        bad.append(f"cycle: {' -> '.join(x + '/' for x in loop)} ({hops})")

    # Cycles between files (only includes that name a file of this tree).
    ggraph = {rel: {t for _, t, _ in incs if t in files} for rel, incs in files.items()}
    for comp in strongly_connected(ggraph):
        loop = loop_in(comp, ggraph)
        bad.append(f"cycle: {' -> '.join(loop)} (an include cycle between files)")

    # The umbrella header reaches no machinery header (breadth first: the shortest include path).
    if "gradlab.hpp" in files:
        parent = {"gradlab.hpp": None}
        queue = ["gradlab.hpp"]
        while queue:
            f = queue.pop(0)
            for t in sorted(ggraph.get(f, ())):
                if t not in parent:
                    parent[t] = f
                    queue.append(t)
        for f in sorted(parent):
            if MACHINERY.match(f):
                path, x = [], f
                while x is not None:
                    path.append(x)
                    x = parent[x]
                bad.append(f"{root / 'gradlab.hpp'}: the umbrella header reaches the machinery header "
                           f"{f} ({' -> '.join(reversed(path))}); hint: move what the public header "
                           "needs into a header of its own, or include the machinery in the .cpp")

    for b in bad:
        print(b)
    print(f"check_layers: {len(files)} files, {len(RANK)} ranked folders, {len(bad)} problems "
          "(upward, sideways, unranked, cyclic, compiler-internal or machinery in gradlab.hpp)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
