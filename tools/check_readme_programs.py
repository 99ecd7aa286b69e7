#!/usr/bin/env python3
"""Compile and run every complete program of the root READMEs; compare what it prints.

THE RULE
  * A ```cpp block of README.md or README.zh-CN.md that defines `int main(` is a complete
    program. It must be followed by its caption ("prints", zh-CN "输出"; "exits with N" /
    "退出码为 N" when its exit status is not 0) and a ``` block with what it prints. ctest builds
    it against gradlab (checks/readme/readme_programs.cmake), runs it from the repository root,
    and compares its stdout with that block by the excerpt rule of
    tools/check_lesson_readmes.py (same masks, numbers within the same tolerance, "..." for any
    text, lines in order; a blank line is not compared).
  * Every other ```cpp block is a sketch: the paragraph just before it says so ("sketch",
    zh-CN "片段"), or the caption after it names the test that runs it ("runs this code", zh-CN
    "运行这段代码"). `lint` fails on a block that is neither.
  * The two pages show the same programs; blocks that differ only in their // comments are one
    program (built once, its output compared with both pages' blocks).

  check_readme_programs.py extract --out DIR        # writes DIR/<id>.cpp, prints "<id> <n> <mpi>"
  check_readme_programs.py lint                     # every cpp block is a program or a sketch
  check_readme_programs.py run --id ID --exe EXE    # runs EXE, compares with every page showing ID
  (each takes --pages P...: other pages, relative to the repository root; the fixture tests do)
"""

import argparse
import hashlib
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = ("README.md", "README.zh-CN.md")
SKETCH_BEFORE = re.compile(r"sketch|片段", re.I)
CHECKED_AFTER = re.compile(r"runs this code|运行这段代码")
PRINTS = re.compile(r"^\s*(prints|输出)")
EXIT = re.compile(r"exits with (\d+)|退出码为 ?(\d+)")

sys.path.insert(0, str(ROOT / "tools"))
import check_lesson_readmes as checker  # noqa: E402  (the excerpt rule: masks, number tolerance)


def blocks(text):
    """Fenced blocks of a page: (info, first line number, lines, prose before, prose after)."""
    lines = text.splitlines()
    found, i, prose_start = [], 0, 0
    while i < len(lines):
        opening = re.match(r"^(```+)\s*(\S*)\s*$", lines[i])
        if not opening:
            i += 1
            continue
        fence, info, start = opening.group(1), opening.group(2).lower(), i + 1
        j = start
        while j < len(lines) and lines[j].strip() != fence:
            j += 1
        found.append({"info": info, "line": start + 1, "lines": lines[start:j],
                      "before": lines[prose_start:i]})
        i = prose_start = j + 1
    for k, block in enumerate(found):
        block["after"] = found[k + 1]["before"] if k + 1 < len(found) else []
    return found


def last_paragraph(lines):
    out = []
    for line in reversed(lines):
        if not line.strip():
            if out:
                break
            continue
        out.append(line)
    return " ".join(reversed(out))


def strip_comments(code):
    """The code without // comments (outside string literals) and trailing spaces."""
    out = []
    for line in code.splitlines():
        in_str, k = False, 0
        while k < len(line):
            c = line[k]
            if c == '"' and (k == 0 or line[k - 1] != "\\"):
                in_str = not in_str
            elif not in_str and line.startswith("//", k):
                line = line[:k]
                break
            k += 1
        if line.strip():
            out.append(line.rstrip())
    return "\n".join(out)


def programs(pages):
    """{id: {"code": str, "shown": [(page, line, expected lines or None, exit status)]}}."""
    result = {}
    for name in pages:
        page = ROOT / name
        if not page.exists():
            continue
        found = blocks(page.read_text(encoding="utf-8"))
        for k, block in enumerate(found):
            code = "\n".join(block["lines"]) + "\n"
            if block["info"] != "cpp" or not re.search(r"\bint main\s*\(", code):
                continue
            pid = "readme_" + hashlib.sha1(strip_comments(code).encode()).hexdigest()[:10]
            expected, status = None, 0
            nxt = found[k + 1] if k + 1 < len(found) else None
            caption = " ".join(l.strip() for l in block["after"] if l.strip())
            if nxt and nxt["info"] in ("", "text") and PRINTS.match(caption):
                expected = nxt["lines"]
                m = EXIT.search(caption)
                if m:
                    status = int(m.group(1) or m.group(2))
            entry = result.setdefault(pid, {"code": code, "shown": []})
            entry["shown"].append((name, block["line"], expected, status))
    return result


def cmd_extract(args):
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    found = programs(args.pages)
    for stale in out.glob("readme_*.cpp"):  # a program the pages no longer show
        if stale.stem not in found:
            stale.unlink()
    for pid, p in sorted(found.items()):
        f = out / f"{pid}.cpp"
        header = "// Extracted from " + ", ".join(f"{page}:{line}" for page, line, _, _ in p["shown"])
        text = header + " by tools/check_readme_programs.py; do not edit.\n" + p["code"]
        if not f.exists() or f.read_text(encoding="utf-8") != text:
            f.write_text(text, encoding="utf-8")
        uses_mpi = "init_process_group" in p["code"]
        print(pid, len(p["shown"]), "mpi" if uses_mpi else "-")
    return 0


def cmd_lint(args):
    errors, count = [], 0
    for name in args.pages:
        page = ROOT / name
        for block in blocks(page.read_text(encoding="utf-8")):
            if block["info"] != "cpp":
                continue
            count += 1
            code = "\n".join(block["lines"])
            if re.search(r"\bint main\s*\(", code):
                caption = " ".join(l.strip() for l in block["after"] if l.strip())
                if not PRINTS.match(caption):
                    errors.append(f"{name}:{block['line']}: a complete program without its output: "
                                  f"follow it with 'prints' (zh-CN '输出') and a ``` block")
                continue
            if SKETCH_BEFORE.search(last_paragraph(block["before"])):
                continue
            if CHECKED_AFTER.search(" ".join(block["after"][:4])):
                continue
            errors.append(f"{name}:{block['line']}: a cpp block that is neither a complete program "
                          f"(int main) nor captioned as a sketch ('sketch' / '片段' in the paragraph "
                          f"before it) nor run by a named test ('runs this code' after it)")
    for e in errors:
        print(e)
    print(f"{'FAIL' if errors else 'ok'}: {count} cpp block(s) in {', '.join(args.pages)}, "
          f"{len(errors)} unaccounted for")
    return 1 if errors else 0


def cmd_run(args):
    p = programs(args.pages).get(args.id)
    if p is None:
        print(f"FAIL: no README block has id {args.id} any more: re-run cmake (the READMEs changed)")
        return 1
    env = dict(os.environ)
    env.setdefault("GRADLAB_DATA_DIR", str(ROOT / "data"))
    run = subprocess.run([args.exe], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
                         env=env, timeout=args.timeout)
    out = run.stdout.decode("utf-8", "replace")
    masked_real = [checker.mask(l) for l in out.splitlines()]
    failed = False
    for page, line, expected, status in p["shown"]:
        where = f"{page}:{line}"
        if expected is None:
            print(f"FAIL {where}: the program has no 'prints' block after it")
            failed = True
            continue
        if run.returncode != status:
            print(f"FAIL {where}: exit status {run.returncode}, the page says {status}")
            failed = True
            continue
        position, missing = 0, None
        for raw in expected:
            if not raw.strip() or raw.strip() == "...":
                continue
            match = checker.line_matcher(checker.mask(raw))
            found = next((i for i in range(position, len(masked_real)) if match(masked_real[i])),
                         None)
            if found is None:
                missing = raw
                break
            position = found + 1
        if missing is not None:
            print(f"FAIL {where}: the page shows a line the program does not print "
                  f"(searched from output line {position + 1} on):\n    README: {missing.rstrip()}")
            failed = True
        else:
            print(f"ok   {where}")
    if failed:
        sys.stdout.write("---- the program printed ----\n" + out)
        sys.stderr.write(run.stderr.decode("utf-8", "replace"))
        return 1
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("extract")
    e.add_argument("--out", required=True)
    sub.add_parser("lint")
    r = sub.add_parser("run")
    r.add_argument("--id", required=True)
    r.add_argument("--exe", required=True)
    r.add_argument("--timeout", type=float, default=300)
    for sp in (e, sub.choices["lint"], r):
        sp.add_argument("--pages", nargs="+", default=list(PAGES),
                        help="pages relative to the repository root (default: both READMEs)")
    args = ap.parse_args(argv)
    return {"extract": cmd_extract, "lint": cmd_lint, "run": cmd_run}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
