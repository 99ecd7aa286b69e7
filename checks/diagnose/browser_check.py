#!/usr/bin/python3
"""Opens the doctor's HTML reports in a real headless browser and checks what renders.

  browser_check.py --fixture HTML_FIXTURE --work DIR [--plant KIND --expect-failure REGEX]

HTML_FIXTURE (checks/diagnose/html_fixture.cpp) writes the pages and manifest.json (what each
page must show). For each page, in Chromium driven by chromedriver through Selenium:
  - #verdict and every stage section (#stage-data, -model, -training) are displayed, with the
    verdict the manifest gives (data-verdict), and the page holds the findings it should;
  - each chart the manifest names is displayed; each of its SVGs has a non-zero rendered size and
    holds drawn elements (getBBox of its curves / bars / series not empty), as many as expected;
  - texts the manifest lists appear as text (escaped markup is not parsed);
  - the browser's console logged nothing at level SEVERE (a JavaScript error, a failed load).
Exit 0 when every check holds, 1 when one fails (each failure printed), 77 (ctest's skip) when
Chromium, chromedriver or Selenium is missing, with the reason.

--plant breaks the healthy page first, to show the checks can fail: "no-chart" removes the LR
range chart, "js-error" adds a script that throws. With --expect-failure REGEX the exit status is
inverted: 0 only when the checks fail and a failure matches REGEX.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys

SKIP = 77
STAGES = ("data", "model", "training")
# What a drawn element of each chart kind is, and the manifest's count of them.
DRAWN = {"lr_range": ("path.curve", "curves"), "activations": ("rect.bar", "bars"),
         "grad_norms": ("g.series path", "series")}


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(SKIP)


def plant(kind, page_path):
    """Breaks the page in place (a planted bug the checks must catch)."""
    with open(page_path, encoding="utf-8") as f:
        html = f.read()
    if kind == "no-chart":
        broken = re.sub(r'<figure class="chart" id="chart-lr_range".*?</figure>\n', "", html, flags=re.S)
    elif kind == "js-error":
        broken = html.replace("</body>", "<script>undefined_function_of_the_planted_bug();</script>\n</body>")
    else:
        raise SystemExit(f"unknown --plant {kind!r}")
    if broken == html:
        raise SystemExit(f"--plant {kind}: the page did not change (the fixture's page is not what this expects)")
    with open(page_path, "w", encoding="utf-8") as f:
        f.write(broken)


def check_page(driver, url, page):
    """Returns the failures on one page (empty: it renders as the manifest says)."""
    failures = []
    name = page["file"]
    driver.get(url)
    by_css = "css selector"
    verdict = driver.find_elements(by_css, "#verdict")
    if not verdict or not verdict[0].is_displayed() or not verdict[0].text.startswith("doctor:"):
        failures.append(f"{name}: #verdict is not displayed or does not start with 'doctor:'")
    for stage in STAGES:
        found = driver.find_elements(by_css, f"section#stage-{stage}")
        if not found or not found[0].is_displayed() or found[0].size["height"] <= 0:
            failures.append(f"{name}: stage section #stage-{stage} is not displayed")
            continue
        got = found[0].get_attribute("data-verdict")
        if got != page["stages"][stage]:
            failures.append(f"{name}: stage {stage} shows verdict {got!r}, expected {page['stages'][stage]!r}")
    findings = [e for e in driver.find_elements(by_css, "article.finding") if e.is_displayed()]
    if len(findings) != page["findings"]:
        failures.append(f"{name}: {len(findings)} findings displayed, expected {page['findings']}")
    charts = driver.find_elements(by_css, "figure.chart")
    kinds = [c.get_attribute("data-chart") for c in charts]
    for kind, want in page["charts"].items():
        if kind not in kinds:
            failures.append(f"{name}: chart {kind} missing")
            continue
        chart = charts[kinds.index(kind)]
        svgs = chart.find_elements(by_css, "svg")
        if len(svgs) != want["svgs"]:
            failures.append(f"{name}: chart {kind} has {len(svgs)} SVGs, expected {want['svgs']}")
        selector, count_key = DRAWN[kind]
        drawn_total = 0
        for i, svg in enumerate(svgs):
            # The rendered box of the SVG, and how many of its drawn elements have a non-empty one.
            size = driver.execute_script("const r = arguments[0].getBoundingClientRect(); return [r.width, r.height];", svg)
            if not (size[0] > 0 and size[1] > 0):
                failures.append(f"{name}: chart {kind} SVG {i} renders {size[0]} x {size[1]} pixels")
            stats = driver.execute_script(
                "const els = arguments[0].querySelectorAll(arguments[1]);"
                "let drawn = 0; for (const e of els) { const b = e.getBBox(); if (b.width > 0 || b.height > 0) drawn++; }"
                "return [els.length, drawn];", svg, selector)
            if stats[1] == 0:
                failures.append(f"{name}: chart {kind} SVG {i} draws nothing ({stats[0]} {selector}, none with a size)")
            drawn_total += stats[0]
        if drawn_total != want[count_key]:
            failures.append(f"{name}: chart {kind} has {drawn_total} {selector}, expected {want[count_key]}")
    for kind in kinds:
        if kind not in page["charts"]:
            failures.append(f"{name}: unexpected chart {kind}")
    body = driver.find_element(by_css, "body").text
    for text in page["texts"]:
        if text not in body:
            failures.append(f"{name}: the text {text!r} is not shown as text")
    for entry in driver.get_log("browser"):
        if entry.get("level") == "SEVERE":
            failures.append(f"{name}: the browser logged a JavaScript error or failed load: {entry.get('message')}")
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    ap.add_argument("--plant", choices=("no-chart", "js-error"))
    ap.add_argument("--expect-failure", metavar="REGEX")
    args = ap.parse_args()

    for what, path in (("chromium", args.chromium), ("chromedriver", args.chromedriver)):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            skip(f"no {what} at {path} (Debian: apt-get install chromium chromium-driver; tools/setup.sh does)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as e:
        skip(f"no selenium for {sys.executable} ({e}; Debian: apt-get install python3-selenium)")

    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    proc = subprocess.run([args.fixture, args.work], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(proc.stdout, end="")
    if proc.returncode != 0:
        print(f"FAIL: {args.fixture} exited {proc.returncode}")
        return 1
    with open(os.path.join(args.work, "manifest.json"), encoding="utf-8") as f:
        pages = json.load(f)["pages"]
    if args.plant:
        plant(args.plant, os.path.join(args.work, "healthy.html"))
        print(f"planted: {args.plant} in healthy.html")

    options = webdriver.ChromeOptions()
    options.binary_location = args.chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1200,900"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=args.chromedriver), options=options)
    failures = []
    try:
        for page in pages:
            path = os.path.abspath(os.path.join(args.work, page["file"]))
            got = check_page(driver, "file://" + path, page)
            print(f"{page['file']}: {'ok' if not got else f'{len(got)} failed'} "
                  f"({len(STAGES)} stages, {len(page['charts'])} charts, {page['findings']} findings)")
            failures += got
    finally:
        driver.quit()
    for f in failures:
        print(f"FAIL: {f}")
    if args.expect_failure:
        pattern = re.compile(args.expect_failure)
        if not failures:
            print("browser_check: every check passed, but the planted bug should have failed one")
            return 1
        if not any(pattern.search(f) for f in failures):
            print(f"browser_check: checks failed, but none with {pattern.pattern!r}")
            return 1
        print(f"browser_check: the planted bug failed as it should ({pattern.pattern!r})")
        return 0
    if failures:
        return 1
    print(f"browser_check: {len(pages)} pages render in {args.chromium}, no console error")
    return 0


if __name__ == "__main__":
    sys.exit(main())
