#!/usr/bin/env python3
"""Keep the Chinese pages' terminology what the glossary says.

The glossary is the table under "## 术语表" in README.zh-CN.md: | English | 页面用 | 不用 | 说明 |.
"页面用" holds the term the pages use (several separated by " / "), "不用" the renderings they avoid
(separated by "、"; an N stands for any section number, e.g. "第 N 部分" catches 第 3 部分 and 第 3c 部分).

Fails when
  - a zh page (README.zh-CN.md, lessons/*/README.zh-CN.md, the markdown cells of the Chinese
    notebooks notebooks/zh-CN/*.ipynb, and any --also page) uses an avoided term,
  - a term of the "页面用" column appears on no zh page (outside the glossary itself),
  - the glossary is missing, has fewer than 20 rows, or does not avoid 论断.
Fenced code blocks (program output, which stays English) and the glossary itself are not scanned.

  python3 tools/check_zh_terms.py [--root DIR] [--also PAGE ...]
"""
import argparse
import glob
import json
import os
import re
import sys

HEADING = "## 术语表"
MUST_AVOID = "论断"


def prose_lines(text, skip_glossary):
    """(line number, line) of the prose: no fenced code blocks, and no glossary if asked."""
    out = []
    in_code = False
    in_glossary = False
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        if line.startswith("## "):
            in_glossary = skip_glossary and line.strip() == HEADING
        if in_glossary:
            continue
        out.append((n, line))
    return out


def parse_glossary(text):
    """[(english, [used terms], [avoided terms])] from the glossary table."""
    rows = []
    in_glossary = False
    for line in text.splitlines():
        if line.startswith("## "):
            in_glossary = line.strip() == HEADING
            continue
        if not in_glossary or not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or cells[0] == "English" or set(cells[0]) <= set("-: "):
            continue
        used = [t.strip() for t in cells[1].split(" / ") if t.strip()]
        avoided = [t.strip() for t in cells[2].split("、") if t.strip()]
        rows.append((cells[0], used, avoided))
    return rows


def avoided_pattern(term):
    parts = [re.escape(p) for p in term.split("N")]
    return re.compile(r"[0-9]+[a-z]?(?:、[0-9]+[a-z]?)*".join(parts))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--also", action="append", default=[], help="another zh page to scan (a fixture)")
    args = ap.parse_args()
    root = os.path.normpath(args.root)
    readme = os.path.join(root, "README.zh-CN.md")
    pages = [readme] + sorted(glob.glob(os.path.join(root, "lessons", "*", "README.zh-CN.md"))) + args.also
    pages += sorted(glob.glob(os.path.join(root, "notebooks", "zh-CN", "*.ipynb")))

    problems = []
    try:
        glossary_text = open(readme, encoding="utf-8").read()
    except OSError as e:
        print(f"check_zh_terms: cannot read {readme}: {e}")
        return 2
    rows = parse_glossary(glossary_text)
    if len(rows) < 20:
        problems.append(f"{readme}: the glossary ({HEADING}) has {len(rows)} rows, fewer than 20")
    if not any(MUST_AVOID in avoided for _, _, avoided in rows):
        problems.append(f"{readme}: the glossary does not list {MUST_AVOID} as avoided")

    avoided = [(t, avoided_pattern(t), used[0] if used else "?", en)
               for en, used, ts in rows for t in ts]
    corpus = []
    for page in pages:
        try:
            text = open(page, encoding="utf-8").read()
            if page.endswith(".ipynb"):  # its markdown cells, one after another (line numbers count them)
                cells = json.loads(text)["cells"]
                text = "\n".join("".join(c["source"]) if isinstance(c["source"], list) else c["source"]
                                  for c in cells if c["cell_type"] == "markdown")
        except (OSError, ValueError, KeyError) as e:
            problems.append(f"{page}: cannot read: {e}")
            continue
        rel = os.path.relpath(page, root) if not os.path.isabs(page) or page.startswith(root) else page
        for n, line in prose_lines(text, skip_glossary=(page == readme)):
            corpus.append(line)
            for term, pat, use, en in avoided:
                m = pat.search(line)
                if m:
                    problems.append(f"{rel}:{n}: uses {m.group(0)!r} for {en!r}; the glossary says {use!r}"
                                    f" (it avoids {term!r})")
    prose = "\n".join(corpus)
    for en, used, _ in rows:
        for term in used:
            if term not in prose:
                problems.append(f"{readme}: glossary term {term!r} ({en}) appears on no zh page")

    for p in problems:
        print(p)
    print(f"check_zh_terms: {len(pages)} pages, {len(rows)} glossary rows, {len(avoided)} avoided terms: "
          + ("OK" if not problems else f"FAIL ({len(problems)} problems)"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
