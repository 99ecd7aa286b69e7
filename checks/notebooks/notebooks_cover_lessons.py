#!/usr/bin/python3
"""ctest notebook_every_lesson_has_one: each lessons/NN_slug/ (a folder with main.cpp) has its
twin notebooks/NN_slug.ipynb, and every notebook is one a kernel can open:

  * nbformat 4; metadata.kernelspec {"name": "xcpp17", "language": "C++17", ...} (xeus-cling's
    C++17 kernel, and gradlab's xgradlab installed under that name) and language_info.name c++;
  * at least one markdown cell (the lesson's story) and one code cell, and the first code cell
    includes <gradlab/gradlab.hpp> (xeus-cling needs it; xgradlab has it preloaded anyway).

  notebooks_cover_lessons.py [--lessons lessons] [--notebooks notebooks]

Exit 1 listing every problem. (Stored outputs are checked by tools/run_notebooks.py.)
"""

import argparse
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def problems_of(nb_path):
    try:
        nb = json.loads(nb_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        return [f"{nb_path}: not a readable notebook ({e})"]
    out = []
    if nb.get("nbformat") != 4:
        out.append(f"{nb_path}: nbformat {nb.get('nbformat')}, expected 4")
    spec = nb.get("metadata", {}).get("kernelspec", {})
    if spec.get("name") != "xcpp17" or spec.get("language") != "C++17":
        out.append(f"{nb_path}: kernelspec {spec}, expected name xcpp17, language C++17")
    if nb.get("metadata", {}).get("language_info", {}).get("name") != "c++":
        out.append(f"{nb_path}: language_info.name is not c++")
    cells = nb.get("cells", [])
    code = [c for c in cells if c.get("cell_type") == "code"]
    if not any(c.get("cell_type") == "markdown" for c in cells):
        out.append(f"{nb_path}: no markdown cell (a notebook tells its lesson's story)")
    if not code:
        out.append(f"{nb_path}: no code cell")
    else:
        first = "".join(code[0].get("source", []))
        if not re.search(r"#\s*include\s*<gradlab/gradlab\.hpp>", first):
            out.append(f"{nb_path}: the first code cell does not include <gradlab/gradlab.hpp>")
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lessons", type=pathlib.Path, default=ROOT / "lessons")
    parser.add_argument("--notebooks", type=pathlib.Path, default=ROOT / "notebooks")
    args = parser.parse_args()
    lessons = sorted(p.name for p in args.lessons.iterdir()
                     if p.is_dir() and re.fullmatch(r"\d\d_\w+", p.name) and (p / "main.cpp").exists())
    if not lessons:
        print(f"no lessons found in {args.lessons}")
        return 1
    problems = []
    for name in lessons:
        nb = args.notebooks / f"{name}.ipynb"
        if not nb.exists():
            problems.append(f"lesson {name} has no notebook: add {nb} (nbformat 4, kernelspec "
                            "xcpp17; fill its outputs with tools/run_notebooks.py --update)")
    for nb in sorted(args.notebooks.glob("*.ipynb")):
        problems.extend(problems_of(nb))
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"every lesson has its notebook: {len(lessons)} lessons, "
          f"{len(list(args.notebooks.glob('*.ipynb')))} notebooks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
