#!/usr/bin/env python3
"""Runs every break-it switch of a lesson and checks that each one breaks its claim.

    check_lesson_bugs.py --exe build/release/lessons/lesson_03_verify_backprop

`<exe> --bugs` lists the lesson's planted bugs, one per line: name <TAB> what it plants <TAB> a
piece of the claim it must make fail. For each, `<exe> --bug NAME` must
  - say "planted bug on: NAME",
  - print that claim as failed ("  [FAIL] ...<claim>..."),
  - end with the lesson's FAILED verdict and exit code 1 (not a crash, not a timeout).
A lesson that lists no bug is an error here (ctest registers only lessons that call L.bug).
Exit code 0 when every bug broke its claim, 1 otherwise.
"""
import argparse
import subprocess
import sys


def run(cmd, timeout):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--exe", required=True, help="the lesson executable")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per run")
    args = ap.parse_args()

    listing = run([args.exe, "--bugs"], args.timeout)
    if listing.returncode != 0:
        print(f"check_lesson_bugs: {args.exe} --bugs exited {listing.returncode}\n{listing.stderr}")
        return 1
    bugs = []
    for line in listing.stdout.splitlines():
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 3 or not all(p.strip() for p in parts):
            print(f"check_lesson_bugs: a --bugs line is not 'name<TAB>what<TAB>claim': {line!r}")
            return 1
        bugs.append(parts)
    if not bugs:
        print(f"check_lesson_bugs: {args.exe} declares no planted bug")
        return 1

    failures = 0
    for name, what, claim in bugs:
        try:
            r = run([args.exe, "--bug", name], args.timeout)
        except subprocess.TimeoutExpired:
            print(f"[missed] {name}: timed out after {args.timeout:.0f} s")
            failures += 1
            continue
        out = r.stdout.splitlines()
        problems = []
        if not any(l.startswith(f"planted bug on: {name}:") for l in out):
            problems.append("no 'planted bug on' line")
        failed_claims = [l for l in out if l.startswith("  [FAIL] ")]
        if not any(claim in l for l in failed_claims):
            problems.append(f"no failed claim contains {claim!r} (failed: {len(failed_claims)})")
        if r.returncode != 1:
            problems.append(f"exit code {r.returncode}, expected 1 (the FAILED verdict)")
        if not any(l.startswith("lesson ") and ": FAILED" in l for l in out):
            problems.append("no FAILED verdict line")
        if problems:
            failures += 1
            print(f"[missed] {name} ({what}): " + "; ".join(problems))
            for l in failed_claims:
                print(f"         {l.strip()}")
        else:
            hit = next(l for l in failed_claims if claim in l)
            print(f"[caught] {name} ({what}): {hit.strip()}")
    print(f"check_lesson_bugs: {len(bugs) - failures} of {len(bugs)} planted bugs caught by their claim")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
