#!/usr/bin/env python3
"""Strings from the cluster are inert in every report output (issue 18).

For each seed: make_hostile_run.cpp writes a run whose every string is hostile (markup
with a unique <hostile-N ...> marker tag and an onmouseover attribute, quotes, control
characters, invalid UTF-8, CDATA and comment ends, 10 kB runs) and a threshold file with
hostile rule names; the real gpuaccept-report runs on it; then
  - report.html is valid UTF-8 and, parsed, has no <hostile-*>, <script>, <img>, no
    on* attribute and no javascript: URL: every string arrived escaped;
  - summary.json parses (strict JSON) and junit.xml parses as XML;
  - the marker of a hostname appears in the HTML as text (escaped, not lost);
  - bad-nodes.txt is refused by sbatch/nodes_from_run.sh (not a plain hostlist), and drain.sh
    and resume.sh pass `sh -n`.
Usage: hostile_strings_test.py REPORT_BIN HOSTILE_BIN WORK_DIR [--seeds N]
"""
import argparse
import html.parser
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET


class Tags(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.bad = []
        self.text = []

    def handle_starttag(self, tag, attrs):
        if tag.startswith("hostile") or tag in ("script", "img", "iframe", "object", "embed"):
            self.bad.append(f"tag <{tag}>")
        for name, value in attrs:
            if name.startswith("on") or name.startswith("hostile"):
                self.bad.append(f"attribute {name} on <{tag}>")
            if value and value.strip().lower().startswith("javascript:"):
                self.bad.append(f"javascript: URL in {name} on <{tag}>")

    def handle_data(self, data):
        self.text.append(data)


def check(report, hostile, work, seed, source):
    d = os.path.join(work, f"seed-{seed}")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    subprocess.run([hostile, d, str(seed)], check=True, stdout=subprocess.DEVNULL)
    run = os.path.join(d, "run")
    p = subprocess.run([report, run, "--thresholds", os.path.join(d, "thresholds.yaml"), "--no-history"],
                       capture_output=True, timeout=120)
    problems = []
    if p.returncode not in (0, 1, 3):
        return [f"report exit {p.returncode}: {p.stderr.decode('utf-8', 'replace')[-2000:]}"]
    raw = open(os.path.join(run, "report.html"), "rb").read()
    try:
        page = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        problems.append(f"report.html is not UTF-8: {e}")
        page = raw.decode("utf-8", "replace")
    parser = Tags()
    parser.feed(page)
    parser.close()
    problems += [f"report.html: {b}" for b in parser.bad[:5]]
    text = "".join(parser.text)
    if "<hostile-" not in text:
        problems.append("report.html: no hostile string shown as text (escaped too much, or dropped)")
    try:
        json.load(open(os.path.join(run, "summary.json"), encoding="utf-8"))
    except Exception as e:  # noqa: BLE001 - any parse failure is the finding
        problems.append(f"summary.json does not parse: {e}")
    try:
        ET.parse(os.path.join(run, "junit.xml"))
    except Exception as e:  # noqa: BLE001
        problems.append(f"junit.xml does not parse: {e}")
    if subprocess.run(["sh", "-n", os.path.join(run, "drain.sh")]).returncode != 0:
        problems.append("drain.sh is not valid sh")
    if subprocess.run(["sh", "-n", os.path.join(run, "resume.sh")]).returncode != 0:
        problems.append("resume.sh is not valid sh")
    sel = subprocess.run([os.path.join(source, "sbatch", "nodes_from_run.sh"), "exclude", run], capture_output=True)
    if os.path.getsize(os.path.join(run, "bad-nodes.txt")) and sel.returncode != 2:
        problems.append(f"nodes_from_run.sh accepted a hostile bad-nodes.txt: {sel.stdout!r}")
    return problems


def main():
    a = argparse.ArgumentParser()
    a.add_argument("report")
    a.add_argument("hostile")
    a.add_argument("work")
    a.add_argument("--seeds", type=int, default=10)
    args = a.parse_args()
    source = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    failed = 0
    for seed in range(1, args.seeds + 1):
        problems = check(args.report, args.hostile, args.work, seed, source)
        for pr in problems:
            print(f"seed {seed}: {pr}")
        failed += bool(problems)
    print(f"{args.seeds - failed} of {args.seeds} seeds: every output well formed, every string escaped")
    print("PASS" if failed == 0 else "FAIL")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
