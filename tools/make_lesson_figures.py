#!/usr/bin/python3
"""Regenerate the figures of the lesson READMEs, or check that the committed ones are current.

  tools/make_lesson_figures.py                 # every lesson whose main.cpp calls LESSON_FIGURE(
  tools/make_lesson_figures.py 05 16           # these lessons
  tools/make_lesson_figures.py --build-dir build/release 01
  tools/make_lesson_figures.py --check --exe build/release/lessons/lesson_05_data_loading \
        --lesson-dir lessons/05_data_loading     # what ctest lesson_figures_NN_slug runs

A lesson draws its figures with gradlab::display and writes them with LESSON_FIGURE
(lessons/common/figures.hpp) into $GRADLAB_LESSON_FIGURES_DIR. This script runs the built lesson
with that folder set to a temporary one (the lesson must pass), in one pinned numeric setting
(PINNED_ENV below: OpenBLAS's Prescott kernels on one thread), then:

  * without --check: replaces lessons/NN_slug/figures/ with what the run wrote (a figure the
    lesson no longer draws is removed);
  * with --check: fails unless the committed figures are current:
      - the same file names as the run wrote (a new figure not committed, or a committed one the
        lesson no longer draws, fails);
      - an .svg equals the fresh one as text, XML comments aside (Graphviz writes its version in
        one);
      - a .png has the fresh one's size, and at most 10% of its "ink" (pixels that differ from the
        picture's background in either image) differs by more than 64/255 in a channel: another
        CPU's BLAS may move a curve by a pixel here and there, while a stale figure (other data,
        another curve, other digits) moves most of its ink;
    and, with or without --check, every figure is shown by README.md and README.zh-CN.md as
    ![...](figures/NAME), and every figures/NAME they show exists.

PNGs are decoded with matplotlib + numpy (Debian's python3-matplotlib / python3-numpy).
Exit status 0 when everything holds, 1 otherwise (each failure named on its own line).
"""

import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIGURE_CALL = "LESSON_FIGURE("
# A figure is what the lesson draws in one pinned setting, the same on every x86-64 CPU: OpenBLAS's
# Prescott kernels (SSE3, which every x86-64 CPU since 2004 runs) on one thread, gradlab's baseline
# kernels on one thread. Unpinned, a curve of a diverging run (lesson 16's lr 0.5) takes another
# path on each BLAS kernel: the last bits of one step decide where a chaotic run goes.
PINNED_ENV = {"OPENBLAS_CORETYPE": "Prescott", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
              "GRADLAB_NUM_THREADS": "1", "GRADLAB_CPU_CAPABILITY": "default"}
PNG_CHANNEL_TOLERANCE = 64 / 255
PNG_INK_FRACTION = 0.10


def run_lesson(exe, out_dir):
    """Runs the lesson with its figures going to out_dir; returns None or an error text."""
    env = dict(os.environ)
    env.update(PINNED_ENV)
    env["GRADLAB_LESSON_FIGURES_DIR"] = str(out_dir)
    env.setdefault("GRADLAB_DATA_DIR", str(ROOT / "data"))
    env.setdefault("GRADLAB_LESSON_OUTPUT_DIR", str(pathlib.Path(out_dir).parent / "output"))
    try:
        proc = subprocess.run([str(exe)], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=1200)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{exe}: could not run: {e}"
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.splitlines()[-15:])
        return f"{exe}: the lesson failed (exit {proc.returncode}), so its figures are not trusted:\n{tail}"
    return None


def strip_svg(text):
    return re.sub(r"<!--.*?-->", "", text, flags=re.S).strip()


def read_png(path):
    import matplotlib.image as mpimg
    import numpy as np

    img = mpimg.imread(str(path), format="png")
    rgb = np.asarray(img, dtype=float)
    if rgb.ndim == 2:
        rgb = rgb[..., None].repeat(3, axis=-1)
    rgb = rgb[..., :3]
    if rgb.max() > 1.5:
        rgb = rgb / 255.0
    return rgb


def compare_png(committed, fresh):
    """None when the committed PNG matches the fresh one within the rule, else why not."""
    import numpy as np

    try:
        a, b = read_png(committed), read_png(fresh)
    except Exception as e:  # truncated, not a PNG, ...
        return f"does not decode: {e}"
    if a.shape != b.shape:
        return f"size {a.shape[1]}x{a.shape[0]}, the lesson now draws {b.shape[1]}x{b.shape[0]}"
    # The background: the most common colour of the fresh picture.
    flat = (b.reshape(-1, 3) * 255).round().astype(int)
    colours, counts = np.unique(flat, axis=0, return_counts=True)
    bg = colours[counts.argmax()] / 255.0
    ink = (np.abs(a - bg).max(axis=-1) > PNG_CHANNEL_TOLERANCE) | (np.abs(b - bg).max(axis=-1) > PNG_CHANNEL_TOLERANCE)
    differ = np.abs(a - b).max(axis=-1) > PNG_CHANNEL_TOLERANCE
    n_ink = int(ink.sum())
    n_diff = int((differ & ink).sum())
    if n_ink == 0:
        return None
    if n_diff > PNG_INK_FRACTION * n_ink:
        return (f"{n_diff} of {n_ink} ink pixels ({100.0 * n_diff / n_ink:.1f}%) differ from what the "
                f"lesson draws now (allowed: {100 * PNG_INK_FRACTION:.0f}%)")
    return None


def check_readmes(lesson_dir, names):
    """Every figure shown by both READMEs, every shown figure present."""
    problems = []
    for page in ("README.md", "README.zh-CN.md"):
        path = lesson_dir / page
        if not path.exists():
            problems.append(f"{path}: missing (it must show the figures {', '.join(sorted(names))})")
            continue
        text = path.read_text(encoding="utf-8")
        shown = set(re.findall(r"!\[[^\]]*\]\(figures/([^)\s]+)\)", text))
        for n in sorted(set(names) - shown):
            problems.append(f"{path}: does not show figures/{n} (add ![...](figures/{n}))")
        for n in sorted(shown - set(names)):
            problems.append(f"{path}: shows figures/{n}, which the lesson does not draw")
    return problems


def draw_fresh(exe, tmp):
    """Runs the lesson with its figures going to tmp/figures: (that folder, None or an error)."""
    fresh_dir = pathlib.Path(tmp) / "figures"
    fresh_dir.mkdir()
    return fresh_dir, run_lesson(exe, fresh_dir)


def check(exe, lesson_dir):
    lesson_dir = pathlib.Path(lesson_dir)
    committed_dir = lesson_dir / "figures"
    with tempfile.TemporaryDirectory(prefix="gradlab-figures-") as tmp:
        fresh_dir, err = draw_fresh(exe, tmp)
        if err:
            return [err]
        fresh = {p.name for p in fresh_dir.iterdir() if p.is_file()}
        committed = {p.name for p in committed_dir.iterdir() if p.is_file()} if committed_dir.is_dir() else set()
        problems = []
        if not fresh:
            problems.append(f"{exe}: the lesson wrote no figure (it calls LESSON_FIGURE, so expected some)")
        hint = f"(run tools/make_lesson_figures.py {lesson_dir.name[:2]})"
        for n in sorted(fresh - committed):
            problems.append(f"{committed_dir}/{n}: not committed; the lesson draws it {hint}")
        for n in sorted(committed - fresh):
            problems.append(f"{committed_dir}/{n}: committed, but the lesson no longer draws it {hint}")
        for n in sorted(fresh & committed):
            c, f = committed_dir / n, fresh_dir / n
            if n.endswith(".svg"):
                if strip_svg(c.read_text(encoding="utf-8")) != strip_svg(f.read_text(encoding="utf-8")):
                    problems.append(f"{c}: stale, the lesson now draws another SVG {hint}")
            elif n.endswith(".png"):
                why = compare_png(c, f)
                if why:
                    problems.append(f"{c}: stale: {why} {hint}")
            else:
                problems.append(f"{c}: neither .svg nor .png")
        problems += check_readmes(lesson_dir, fresh | committed)
        return problems


def regenerate(build_dir, number):
    matches = sorted(p for p in (ROOT / "lessons").glob(f"{number}_*") if (p / "main.cpp").exists())
    if not matches:
        return [f"no lesson {number} under lessons/"]
    lesson_dir = matches[0]
    exe = pathlib.Path(build_dir) / "lessons" / f"lesson_{lesson_dir.name}"
    if not exe.exists():
        return [f"{exe}: not built (cmake --build {build_dir} --target lesson_{lesson_dir.name})"]
    with tempfile.TemporaryDirectory(prefix="gradlab-figures-") as tmp:
        fresh_dir, err = draw_fresh(exe, tmp)
        if err:
            return [err]
        target = lesson_dir / "figures"
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(fresh_dir, target)
        names = sorted(p.name for p in target.iterdir())
        print(f"{target.relative_to(ROOT)}: {', '.join(names) if names else '(none)'}")
        return check_readmes(lesson_dir, set(names))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("lessons", nargs="*", help="lesson numbers (default: every lesson that draws figures)")
    ap.add_argument("--build-dir", default=str(ROOT / "build" / "release"))
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--exe")
    ap.add_argument("--lesson-dir")
    args = ap.parse_args(argv)
    if args.check:
        if not args.exe or not args.lesson_dir:
            ap.error("--check needs --exe and --lesson-dir")
        problems = check(args.exe, args.lesson_dir)
        label = pathlib.Path(args.lesson_dir).name
    else:
        numbers = args.lessons or sorted(
            p.parent.name[:2] for p in (ROOT / "lessons").glob("*/main.cpp")
            if FIGURE_CALL in p.read_text(encoding="utf-8"))
        problems = []
        for n in numbers:
            problems += regenerate(args.build_dir, n)
        label = "figures of lessons " + " ".join(numbers)
    for p in problems:
        print("FAIL " + p)
    if not problems:
        print(f"ok   {label}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
