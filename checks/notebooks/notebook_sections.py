#!/usr/bin/python3
"""ctest notebook_sections: each notebook covers its whole lesson, has an exercise with a collapsed
answer, and its Chinese twin in notebooks/zh-CN/ runs the same code.

  notebook_sections.py [--root DIR] [--notebooks DIR] [NN ...]   # every lesson, or lessons NN ...

For each lessons/NN_slug/main.cpp (DIR defaults to the repository):

  English notebook notebooks/NN_slug.ipynb
    * every section of the lesson, i.e. the title of each `L.section("...")` call (adjacent
      string literals joined), is a markdown heading line `## TITLE` of the notebook, in the
      lesson's order; backticks are dropped and runs of whitespace collapsed before comparing;
    * a markdown heading `## Exercises`, and after it at least one answer: a code cell tagged
      `answer` whose metadata.jupyter.source_hidden is true (Jupyter shows it collapsed).

  Chinese twin notebooks/zh-CN/NN_slug.ipynb
    * the same cells in the same order: equal cell types, and every code cell equal to the
      English one in source, tags, metadata.jupyter and stored outputs (the English notebook is
      the one CI runs through the kernel, so the twin's outputs are checked through it);
    * every markdown cell whose English text has a Latin letter is translated (has a CJK
      character), and a markdown cell holding the heading of section "3a. ..." holds a heading
      that starts with the same number, "3a.".

Exit 1 naming each problem (file, cell number, what), 0 when every notebook passes.
"""

import argparse
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
CJK = re.compile(r"[\u3400-\u9fff]")


def norm(text):
    return re.sub(r"\s+", " ", text.replace("`", "")).strip()


def section_titles(main_cpp):
    """The titles of the L.section(...) calls of a lesson, in order: (text, exact). A title made of
    string literals only (adjacent ones joined) is exact; a computed one, such as
    "3. Speed: softmax of a float32 [" + std::to_string(TN) + ...", gives its leading literal,
    which a heading must start with."""
    text = main_cpp.read_text(encoding="utf-8")
    text = re.sub(r"//[^\n]*", "", text)  # a commented-out call is no section
    lit = r"\"((?:[^\"\\]|\\.)*)\""
    titles = []
    for m in re.finditer(r"\bL\s*\.\s*section\s*\(", text):
        # the argument, up to the matching parenthesis (literals may hold parentheses)
        depth, i, arg = 1, m.end(), []
        while i < len(text) and depth:
            if text[i] == '"':
                j = re.match(lit, text[i:]).end()
                arg.append(text[i:i + j]); i += j; continue
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            if depth:
                arg.append(text[i])
            i += 1
        arg = "".join(arg).strip()
        literal_only = re.fullmatch(r"(?:\s*" + lit + r")+\s*", arg) is not None
        first = re.match(r"(?:\s*" + lit + r")+", arg)
        parts = re.findall(lit, first.group(0)) if first else []
        joined = norm("".join(p.replace('\\"', '"').replace("\\\\", "\\") for p in parts))
        titles.append((joined, literal_only))
    return titles


def matches(title, heading):
    text, exact = title
    return heading == text if exact else heading.startswith(text)


def load(path):
    return json.loads(path.read_text(encoding="utf-8"))


def src(cell):
    s = cell.get("source", "")
    return "".join(s) if isinstance(s, list) else s


def headings(cell):
    if cell.get("cell_type") != "markdown":
        return []
    return [norm(m.group(1)) for m in (HEADING.match(line) for line in src(cell).splitlines()) if m]


def check_english(nb_path, titles):
    out = []
    cells = load(nb_path)["cells"]
    # The sections in order: each title must be found after the previous one.
    pos = 0
    for t in titles:
        hit = lambda c: any(matches(t, h) for h in headings(c))
        found = next((i for i in range(pos, len(cells)) if hit(cells[i])), None)
        if found is None:
            why = "out of the lesson's order" if any(hit(c) for c in cells) else "missing"
            want = f"the section heading '## {t[0]}'" if t[1] else \
                f"a section heading starting with '## {t[0]}'"
            out.append(f"{nb_path}: {want} is {why} (each L.section of the "
                       "lesson is a markdown heading of its notebook, in order)")
        else:
            pos = found + 1
    ex = next((i for i, c in enumerate(cells) if "Exercises" in headings(c)), None)
    if ex is None:
        out.append(f"{nb_path}: no '## Exercises' heading")
    else:
        answers = [c for c in cells[ex + 1:] if c.get("cell_type") == "code"
                   and "answer" in c.get("metadata", {}).get("tags", [])]
        if not answers:
            out.append(f"{nb_path}: no answer after '## Exercises' (a code cell tagged 'answer')")
        for c in answers:
            if c.get("metadata", {}).get("jupyter", {}).get("source_hidden") is not True:
                out.append(f"{nb_path}: an answer cell is not collapsed "
                           "(metadata.jupyter.source_hidden must be true)")
    return out


def check_twin(en_path, zh_path, titles):
    if not zh_path.exists():
        return [f"{zh_path}: missing (the Chinese twin of {en_path.name})"]
    out = []
    en, zh = load(en_path)["cells"], load(zh_path)["cells"]
    if [c["cell_type"] for c in en] != [c["cell_type"] for c in zh]:
        return [f"{zh_path}: its cells are not the English notebook's: types "
                f"{[c['cell_type'][0] for c in zh]} vs {[c['cell_type'][0] for c in en]} (m = markdown, c = code)"]
    for i, (a, b) in enumerate(zip(en, zh), start=1):
        if a["cell_type"] == "code":
            for what, get in (("source", src),
                              ("tags", lambda c: c.get("metadata", {}).get("tags", [])),
                              ("metadata.jupyter", lambda c: c.get("metadata", {}).get("jupyter", {})),
                              ("outputs", lambda c: c.get("outputs", []))):
                if get(a) != get(b):
                    out.append(f"{zh_path}: cell {i}: code cell {what} differs from the English one "
                               "(the twin's code cells are copies)")
            continue
        if re.search(r"[A-Za-z]", src(a)) and not CJK.search(src(b)):
            out.append(f"{zh_path}: cell {i}: markdown not translated (no Chinese character)")
        for h in headings(a):
            if any(matches(t, h) for t in titles):
                num = h.split()[0]
                if not re.match(r"\d+[a-z]?\.$", num):
                    continue
                if not any(z.startswith(num) for z in headings(b)):
                    out.append(f"{zh_path}: cell {i}: no heading starting with '{num}' "
                               f"(the English cell has '## {h}')")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", type=pathlib.Path, default=ROOT)
    ap.add_argument("--notebooks", type=pathlib.Path,
                    help="the notebooks folder (default ROOT/notebooks); the twins are in its zh-CN/")
    ap.add_argument("lessons", nargs="*", help="lesson numbers (default: all)")
    args = ap.parse_args()
    lesson_dirs = sorted(p for p in (args.root / "lessons").iterdir()
                         if p.is_dir() and re.fullmatch(r"\d\d_\w+", p.name) and (p / "main.cpp").exists())
    if args.lessons:
        lesson_dirs = [p for p in lesson_dirs if p.name[:2] in args.lessons]
    if not lesson_dirs:
        print(f"no lessons found under {args.root / 'lessons'}")
        return 1
    nbdir = args.notebooks or args.root / "notebooks"
    problems, n_sections = [], 0
    for d in lesson_dirs:
        titles = section_titles(d / "main.cpp")
        n_sections += len(titles)
        en = nbdir / f"{d.name}.ipynb"
        if not en.exists():
            problems.append(f"{en}: missing")
            continue
        problems += check_english(en, titles)
        problems += check_twin(en, nbdir / "zh-CN" / f"{d.name}.ipynb", titles)
    for p in problems:
        print(p)
    if problems:
        print(f"notebook_sections: {len(problems)} problems")
        return 1
    print(f"notebook_sections: {len(lesson_dirs)} lessons, {n_sections} sections, each a heading of "
          "its notebook; exercises with collapsed answers; Chinese twins with the same code")
    return 0


if __name__ == "__main__":
    sys.exit(main())
