#!/usr/bin/python3
"""Runs a command that must fail: exit status non-zero and REGEX in its output.

  expect_failure.py REGEX -- command args...

The planted-error notebook tests use it: a check that cannot fail is no check.
"""

import re
import subprocess
import sys


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        print(__doc__)
        return 2
    pattern, command = re.compile(sys.argv[1]), sys.argv[3:]
    proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(proc.stdout, end="")
    if proc.returncode == 0:
        print(f"expect_failure: the command passed (exit 0) but should have failed")
        return 1
    if not pattern.search(proc.stdout):
        print(f"expect_failure: it failed (exit {proc.returncode}), but not with {pattern.pattern!r}")
        return 1
    print(f"expect_failure: failed as it should (exit {proc.returncode}, {pattern.pattern!r})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
