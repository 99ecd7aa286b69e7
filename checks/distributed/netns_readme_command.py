#!/usr/bin/env python3
"""The READMEs' hostfile example is the command that ctest mpi.netns_two_hosts runs.

  netns_readme_command.py          # exit 0 when README.md and README.zh-CN.md show it exactly

Compares, option by option, the hostfile lines and the `mpirun ... --hostfile hosts ...` command
of each page's bash block with what checks/distributed/netns_hosts.sh writes and runs
(`printf '...' >"$work/hosts"` and mpirun_on_hosta), the agent's path and the program aside.
It then plants a changed option in a copy of the first page and must catch it, so the check can
fail.
"""

import pathlib
import re
import shlex
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "checks/distributed/netns_hosts.sh"
PAGES = ("README.md", "README.zh-CN.md")


def joined(lines):
    """Lines continued with a trailing backslash, joined; comments dropped."""
    out, cur = [], ""
    for line in lines:
        line = re.sub(r"\s+#.*$", "", line.rstrip())
        if line.endswith("\\"):
            cur += line[:-1] + " "
            continue
        out.append(cur + line)
        cur = ""
    return out


def from_page(text):
    """(hostfile lines, mpirun tokens) of the bash block that has --hostfile."""
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        if "--hostfile" not in block:
            continue
        lines = block.splitlines()
        start = next(i for i, l in enumerate(lines) if l.startswith("cat > hosts <<EOF"))
        end = next(i for i in range(start + 1, len(lines)) if lines[i] == "EOF")
        hosts = lines[start + 1:end]
        cmd = next(l for l in joined(lines[end + 1:]) if l.startswith("mpirun"))
        tokens = shlex.split(cmd)
        return hosts, tokens[:-1]  # the program (./train) aside
    return None, None


def from_script(text):
    m = re.search(r"printf '([^']*)' >\"\$work/hosts\"", text)
    hosts = m.group(1).encode().decode("unicode_escape").splitlines() if m else None
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.strip().startswith("mpirun -np"))
    end = next(i for i in range(start, len(lines)) if '"$@")' in lines[i])
    tokens = shlex.split(" ".join(joined(lines[start:end + 1])))
    tokens = [t.replace("$here/", "checks/distributed/") for t in tokens]
    return hosts, tokens[:-1]  # "$@" (the program) aside


def compare(name, page_text, expected):
    hosts, tokens = from_page(page_text)
    if hosts is None:
        return [f"{name}: no bash block with --hostfile"]
    problems = []
    if hosts != expected[0]:
        problems.append(f"{name}: hostfile {hosts}, the test writes {expected[0]}")
    if tokens != expected[1]:
        problems.append(f"{name}: mpirun {' '.join(tokens)}\n  the test runs {' '.join(expected[1])}")
    return problems


def main():
    expected = from_script(SCRIPT.read_text(encoding="utf-8"))
    if expected[0] is None:
        print(f"FAIL: no hostfile printf in {SCRIPT}")
        return 1
    problems = []
    for page in PAGES:
        problems += compare(page, (ROOT / page).read_text(encoding="utf-8"), expected)
    planted = (ROOT / PAGES[0]).read_text(encoding="utf-8").replace("btl_tcp_if_include", "btl_tcp_if_exclude", 1)
    if not compare("planted", planted, expected):
        problems.append("the check did not catch a planted change (btl_tcp_if_include -> btl_tcp_if_exclude)")
    for p in problems:
        print("FAIL:", p)
    if not problems:
        print(f"ok: {', '.join(PAGES)} show the command of {SCRIPT.relative_to(ROOT)} "
              f"({len(expected[1])} words, {len(expected[0])} hostfile lines)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
