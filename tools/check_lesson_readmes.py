#!/usr/bin/env python3
"""Check that a lesson's README shows what the lesson really prints.

THE EXCERPT RULE
  * The excerpts of a lesson page are the fenced code blocks (``` with no info string, or
    ```text) between its "What you will see" heading and the next heading of the same or a
    higher level. In README.zh-CN.md the heading is "你会看到什么" (any heading that starts
    with 你会看到 or 你将看到 counts). Blocks with another info string (```sh, ```cpp) are
    not excerpts. A page with no excerpt fails: a page cannot drop out of the check silently.
  * Every non-blank line of every excerpt must equal a line of the lesson's real stdout, in
    order (real lines may be skipped between excerpt lines, and later blocks continue after
    the last line matched by the earlier ones). Trailing whitespace is ignored. An excerpt line
    that is only "..." marks skipped lines and is not compared; "..." inside a line stands for
    any text (a long line shortened), the rest of the line must match around it.
  * Before comparing, both sides are masked (where they may differ freely):
      - timings: a number followed by ns, us, µs, ms or s        -> <t> ms / <t> s ...
      - rates:   a number followed by a unit per second (samples/s, GB/s)  -> <n> GB/s
        (for both, the spaces padding the number shrink to one: table columns keep matching
        when a number gains a digit)
      - speed-ups: a decimal number followed by x, or any number followed by "x faster" -> <n>x
      - worker and thread ids: "worker 3", "thread 140234..."      -> worker <id>
      - addresses: 0x7ffd...                                     -> 0x<addr>
      - the directory part of an absolute path (temporary and build folders):
        /tmp/gradlab-lessons/07/x.csv                            -> <dir>/x.csv
      - the padding before a masked timing, rate or speed-up collapses to one space, so a
        wider number that shifts a table's columns (1520.303 ms vs 114.834 ms) still matches
    (these are the masks of tools/run_notebooks.py too, which compares cells with line_matcher)
  * Numbers left after masking are compared as numbers, everything else (checksums, file:line
    sites, claim texts, the words between numbers) exactly; a run of spaces matches any run of
    spaces (a wider number may shift a table column):
      - an integer (no "." and no exponent: a step, a count, a size, a seed) must be equal;
      - a decimal number may differ by one unit in the last digit the README prints (a value a
        hair from a rounding boundary prints either way) plus RTOL = 5e-5 of its size: float32
        noise from another BLAS kernel or thread count (1e-7 per operation, more after some
        training: the loss of lesson 07's diverging run, 125.69, moved by 2.2e-5 of itself)
        stays under that, a changed 4th significant digit does not (it is a relative change of
        at least 1e-4), unless the README prints only 4 significant digits and the change is the
        single unit of the last one that a rounding flip makes.
    So 0.180468553272204 matches 0.180468553272187 and 2.2972 matches 2.2973, but 2.2982 does
    not match 2.2972, nor 0.1806 match 0.1804, nor 17 match 15. A difference that is rounding
    noise is not a number to compare: lessons print it as noise ("< 1e-15"), and that text must
    match exactly.
  * The lesson must exit with status 0.

Usage (ctest runs the first form, one test per lesson, label lesson):
  check_lesson_readmes.py --lesson-dir lessons/07_training_loop --exe build/.../lesson_07_...
  check_lesson_readmes.py --lesson-dir lessons/07_training_loop --stdout saved_output.txt
The lesson runs in the current directory with the current environment (ctest sets
GRADLAB_DATA_DIR and GRADLAB_LESSON_OUTPUT_DIR).
"""

import argparse
import difflib
import pathlib
import re
import subprocess
import sys

PAGES = ("README.md", "README.zh-CN.md")
HEADINGS = (re.compile(r"what you will see", re.I), re.compile(r"^(你会看到|你将看到)"))

_MASKS = [
    # addresses before numbers, so 0x... is not read as a number
    (re.compile(r"0x[0-9a-fA-F]{6,}"), "0x<addr>"),
    # the directory part of an absolute path: keep the file name (lesson 10 checks it)
    (re.compile(r"(?<![\w.~])/(?:[^\s/:'\"()<>,;]+/)+"), "<dir>/"),
    (re.compile(r"\b(worker|thread)( id)?[ #=:]*\d+", re.I), r"\1\2 <id>"),
    # NOTE: with the spaces that pad them: a column printed with %11.3f gets one space more when
    # a loaded machine makes 114 ms into 1140 (lesson 17's table failed its excerpt so).
    (re.compile(r"( *)\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(\s*)(ns|us|µs|ms|s)\b"),
     lambda m: (" " if m.group(1) else "") + "<t>" + m.group(2) + m.group(3)),
    (re.compile(r"( *)\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(\s*)([A-Za-z]+/s)\b"),
     lambda m: (" " if m.group(1) else "") + "<n>" + m.group(2) + m.group(3)),
    (re.compile(r"\d+\.\d+x\b|\d+(?:\.\d+)?x(?= faster)"), "<n>x"),
]


def mask(line):
    line = line.rstrip()
    for pattern, repl in _MASKS:
        line = pattern.sub(repl, line)
    return line


# A number as the lines print it: 12, -0.9750, 5.6e-17, 1e-03, .5 (not the digits of a word
# such as float32 or fnv1a64:7662b4a8, nor a version-like 1.2.3).
_NUMBER = r"(?<![\w.])[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?(?![\w]|\.\d)"
_NUMBER_RE = re.compile(_NUMBER)
# The relative part of the tolerance on decimal numbers (see THE EXCERPT RULE above).
RTOL = 5e-5


def last_digit_unit(text):
    """One unit in the last printed digit: 0.9750 -> 1e-4, 5.6e-17 -> 1e-18, 2e-03 -> 1e-3."""
    mantissa, _, exponent = text.lower().partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return 10.0 ** (int(exponent or 0) - decimals)


def numbers_match(want, real):
    """The README's number `want` against the output's `real` (both as printed)."""
    is_int = lambda t: not any(c in t for c in ".eE")
    if is_int(want) or is_int(real):
        return want.lstrip("+") == real.lstrip("+")
    a, b = float(want), float(real)
    return abs(a - b) <= last_digit_unit(want) + RTOL * abs(a)


def line_matcher(want):
    """want == real, up to the tolerance on numbers, where each "..." of want is any text."""
    parts, numbers, pos = [], [], 0
    for m in _NUMBER_RE.finditer(want):
        parts.append(want[pos:m.start()])
        numbers.append(m.group(0))
        pos = m.end()
    parts.append(want[pos:])

    def literal(text):
        pieces = []
        for i, chunk in enumerate(text.split("...")):
            if i:
                pieces.append(".*?")
            pieces.append(re.sub(r"(?:\\ )+", " +", re.escape(chunk)))
        return "".join(pieces)

    pattern = literal(parts[0])
    for number, text in zip(numbers, parts[1:]):
        pattern += f"({_NUMBER})" + literal(text)
    regex = re.compile(pattern + r"\Z", re.S)

    def match(real):
        m = regex.match(real)
        return m is not None and all(numbers_match(w, r) for w, r in zip(numbers, m.groups()))
    return match


def first_difference(want, real):
    """Where the nearest real line starts to differ, with some context (long lines)."""
    n = 0
    while n < min(len(want), len(real)) and want[n] == real[n]:
        n += 1
    start = max(0, n - 30)
    return (f"first difference at column {n + 1}: README ...{want[start:n + 30]!r}... "
            f"vs output ...{real[start:n + 30]!r}...")


def excerpts(page_text):
    """The excerpt blocks of one page: a list of (first line number, [lines])."""
    blocks, in_section, level, fence, block = [], False, 0, None, None
    for number, line in enumerate(page_text.splitlines(), 1):
        if fence is None:
            heading = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
            if heading:
                title, depth = heading.group(2), len(heading.group(1))
                if any(h.search(title) for h in HEADINGS):
                    in_section, level = True, depth
                elif in_section and depth <= level:
                    in_section = False
                continue
            opening = re.match(r"^\s*(```+|~~~+)\s*(\S*)", line)
            if opening:
                fence = opening.group(1)
                info = opening.group(2).lower()
                block = (number + 1, []) if in_section and info in ("", "text") else None
                continue
        else:
            if line.strip().startswith(fence) and line.strip() == fence[0] * len(line.strip()):
                if block is not None:
                    blocks.append(block)
                fence, block = None, None
                continue
            if block is not None:
                block[1].append(line)
    return blocks


def check_page(page, real_lines):
    """Returns a list of error messages (empty when every excerpt line was found in order)."""
    text = page.read_text(encoding="utf-8")
    blocks = excerpts(text)
    if not blocks:
        return [f"{page}: no excerpt found: put the real output in a ``` block under the "
                f"'What you will see' heading (zh-CN: '你会看到什么')"]
    masked_real = [mask(l) for l in real_lines]
    position = 0  # next real line that may match
    for first, lines in blocks:
        for offset, raw in enumerate(lines):
            if not raw.strip() or raw.strip() == "...":
                continue
            want = mask(raw)
            match = line_matcher(want)
            found = next((i for i in range(position, len(masked_real)) if match(masked_real[i])),
                         None)
            if found is not None:
                position = found + 1
                continue
            where = f"{page}:{first + offset}"
            msg = [f"{where}: excerpt line not found in the lesson's output "
                   f"(searched from output line {position + 1} on):",
                   f"    README: {raw.rstrip()}",
                   f"    masked: {want}"]
            earlier = [i for i in range(position) if match(masked_real[i])]
            if earlier:
                msg.append(f"    (it appears at output line {earlier[-1] + 1}, before the line "
                           f"matched by the previous excerpt line: the order differs)")
            near = difflib.get_close_matches(want, masked_real, n=3, cutoff=0.4)
            if near:
                msg.append("    nearest real lines:")
                seen = set()
                for n in near:
                    for i, m in enumerate(masked_real):
                        if m == n and i not in seen:
                            seen.add(i)
                            msg.append(f"    {i + 1:5d}: {real_lines[i].rstrip()}")
                            break
                msg.append("    " + first_difference(want, near[0]))
            else:
                msg.append("    (no similar real line)")
            return ["\n".join(msg)]
    return []


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lesson-dir", required=True, type=pathlib.Path)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--exe", help="the lesson executable: run it and read its stdout")
    src.add_argument("--stdout", type=pathlib.Path, help="a saved stdout of the lesson")
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args(argv)

    if args.exe:
        run = subprocess.run([args.exe], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             timeout=args.timeout)
        out = run.stdout.decode("utf-8", "replace")
        if run.returncode != 0:
            sys.stdout.write(out)
            sys.stderr.write(run.stderr.decode("utf-8", "replace"))
            print(f"FAIL: {args.exe} exited with status {run.returncode}")
            return 1
    else:
        out = args.stdout.read_text(encoding="utf-8")
    real_lines = out.splitlines()

    pages = [args.lesson_dir / p for p in PAGES if (args.lesson_dir / p).exists()]
    if not pages:
        print(f"FAIL: {args.lesson_dir} has no README.md")
        return 1
    errors = []
    for page in pages:
        page_errors = check_page(page, real_lines)
        errors += page_errors
        print(f"{'FAIL' if page_errors else 'ok  '} {page}")
    for e in errors:
        print(e)
    if errors:
        print(f"FAIL: {len(errors)} page(s) show output the lesson does not print "
              f"(the excerpt rule is at the top of tools/check_lesson_readmes.py)")
        return 1
    print(f"every excerpt line of {len(pages)} page(s) is in the real output, in order")
    return 0


if __name__ == "__main__":
    sys.exit(main())
