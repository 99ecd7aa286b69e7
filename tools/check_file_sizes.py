#!/usr/bin/env python3
"""Checks that no source file under a folder is longer than a limit (900 lines by default): a
file past it is split by concern (as testing/gradcheck/ and jit/ were).

    python3 tools/check_file_sizes.py [--max N] [src]

Prints each file over the limit, and the largest file; exit 1 when one is over.
"""
import pathlib
import sys

SOURCES = {".hpp", ".cpp", ".cuh", ".cu", ".h", ".c"}


def main():
    args = sys.argv[1:]
    limit = 900
    if len(args) >= 2 and args[0] == "--max":
        limit = int(args[1])
        args = args[2:]
    root = pathlib.Path(args[0] if args else "src")
    sizes = []
    for path in sorted(root.rglob("*")):
        if path.suffix in SOURCES and path.is_file():
            with path.open(encoding="utf-8") as f:
                sizes.append((sum(1 for _ in f), path))
    if not sizes:
        print(f"check_file_sizes: no source files under {root}")
        return 1
    over = [(n, p) for n, p in sizes if n > limit]
    for n, p in sorted(over, reverse=True):
        print(f"{p}: {n} lines > {limit}; hint: split it by concern")
    n, p = max(sizes)
    print(f"check_file_sizes: {len(sizes)} files, the largest {p} ({n} lines), "
          f"{len(over)} over {limit}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
