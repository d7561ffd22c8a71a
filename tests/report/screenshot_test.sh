#!/bin/bash
# Opens report.html of the fake run in headless Chromium: the DOM must show the
# verdict and a row for every phase, the hostname "<script>alert(1)</script>" must be
# text in a table cell, and no script may exist or have run. Leaves report.png and
# dom.html in WORK_DIR for a person to look at.
# Usage: screenshot_test.sh REPORT_BIN FIXTURE_BIN WORK_DIR; exit 77 (skip) without chromium.
set -euo pipefail
report=$1 fixture=$2 work=$3

browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [[ -z $browser ]]; then
  echo "SKIP: no chromium installed (apt-get install chromium)"
  exit 77
fi

fail() { echo "FAIL (browser): $*" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work"
"$fixture" "$work/run" >/dev/null
set +e
"$report" "$work/run" --expect-phases discover,smoke,nccl-scaling,ddp,fsdp-lora >"$work/report.log" 2>&1
rc=$?
set -e
[[ $rc == 1 ]] || fail "report exit code $rc, expected 1 (the fixture has a slow GPU)"

profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking
       --disable-component-update --disable-sync --user-data-dir="$profile" --window-size=1400,2000)
url="file://$work/run/report.html"
timeout 60 "$browser" "${flags[@]}" --screenshot="$work/report.png" "$url" >"$work/chromium.log" 2>&1 ||
  fail "chromium --screenshot failed: $(tail -3 "$work/chromium.log")"
[[ -s $work/report.png ]] || fail "no screenshot written"
timeout 60 "$browser" "${flags[@]}" --dump-dom "$url" >"$work/dom.html" 2>>"$work/chromium.log" ||
  fail "chromium --dump-dom failed"

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
