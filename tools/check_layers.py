#!/usr/bin/env python3
"""Checks that gradlab's layers point one way: no file of a lower folder includes a higher one.

    core  <-  autograd, backend  <-  ops  <-  nn, optim, data, io, testing, train

(autograd and backend are side by side: neither includes the other; ops reaches the kernels
through backend/kernels.hpp; the top folders may use each other.) Prints every offending include and exits 1 when there is one.

    python3 tools/check_layers.py [src/gradlab]
"""
import pathlib
import re
import sys

RANK = {"core": 0, "autograd": 1, "backend": 1, "ops": 2}
TOP = 3  # nn, optim, data, io, testing, train, ... and any new folder

INCLUDE = re.compile(r'^\s*#\s*include\s+"gradlab/([a-z_]+)/')


def rank(folder):
    return RANK.get(folder, TOP)


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "src/gradlab")
    bad = []
    files = 0
    for path in sorted(root.rglob("*")):
        if path.suffix not in {".hpp", ".cpp", ".cuh", ".cu"} or path.parent == root:
            continue
        files += 1
        folder = path.relative_to(root).parts[0]
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            target = m.group(1)
            up = rank(target) > rank(folder)
            sideways = rank(target) == rank(folder) and target != folder and rank(folder) < TOP
            if up or sideways:
                bad.append(f"{path}:{n}: {folder}/ includes {target}/ ({line.strip()})")
    for b in bad:
        print(b)
    print(f"check_layers: {files} files, {len(bad)} includes point up or sideways")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
