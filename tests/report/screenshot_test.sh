#!/bin/bash
# Opens report.html of the fake run in headless Chromium: the DOM must show the
# verdict and a row for every phase, the hostname "<script>alert(1)</script>" must be
# text in a table cell, and no script may exist or have run. Leaves report.png and
# dom.html in WORK_DIR for a person to look at.
# Usage: screenshot_test.sh REPORT_BIN FIXTURE_BIN WORK_DIR; exit 77 (skip) without chromium.
set -euo pipefail
report=$1 fixture=$2 work=$3

fail() { echo "FAIL (browser): $*" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work"
"$fixture" "$work/run" >/dev/null
set +e
"$report" "$work/run" --expect-phases discover,smoke,nccl-scaling,ddp,fsdp-lora >"$work/report.log" 2>&1
rc=$?
set -e
[[ $rc == 1 ]] || fail "report exit code $rc, expected 1 (the fixture has a slow GPU)"

here=$(dirname "$0")
"$here/chromium.sh" "$work/run/report.html" "$work/report.png" "$work/dom.html"

python3 - "$work/dom.html" <<'PY'
import re, sys
dom = open(sys.argv[1], encoding="utf-8").read()
def need(cond, what):
    if not cond:
        print("FAIL (browser):", what, file=sys.stderr)
        sys.exit(1)
need(re.search(r'class="verdict-word">FAIL<', dom), "the verdict FAIL is not shown")
for phase in ["discover", "smoke", "nccl-scaling", "ddp", "fsdp-lora"]:
    need(f'<tr class="phase-row" data-phase="{phase}">' in dom, f"no row for phase {phase}")
# The hostname is text inside a table cell, as the serialised DOM escapes text.
need(re.search(r'<td[^>]*>&lt;script&gt;alert\(1\)&lt;/script&gt;</td>', dom), "hostname not shown as text in a <td>")
need("<script" not in dom.lower(), "a <script> element exists in the DOM")
need("<b>cuBLASLt" not in dom, "a <b> from a message became an element")
need(dom.count("<svg") >= 4, "fewer than 4 plots")
PY
echo "PASS (browser): screenshot $work/report.png"
