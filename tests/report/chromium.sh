#!/bin/bash
# chromium.sh HTML_FILE PNG DOM: opens a local HTML file in headless Chromium, writes a
# screenshot to PNG and the DOM as the browser built it to DOM.
# Exit 77 (a skip for CTest) when no Chromium is installed.
set -euo pipefail
html=$1 png=$2 dom=$3
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [[ -z $browser ]]; then
  echo "SKIP: no chromium installed (apt-get install chromium)"
  exit 77
fi
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking
       --disable-component-update --disable-sync --user-data-dir="$profile" --window-size=1400,2000)
url="file://$(realpath "$html")"
log="$dom.chromium.log"
timeout 60 "$browser" "${flags[@]}" --screenshot="$png" "$url" >"$log" 2>&1 ||
  { echo "FAIL (browser): chromium --screenshot failed: $(tail -3 "$log")" >&2; exit 1; }
[[ -s $png ]] || { echo "FAIL (browser): no screenshot written" >&2; exit 1; }
timeout 60 "$browser" "${flags[@]}" --dump-dom "$url" >"$dom" 2>>"$log" ||
  { echo "FAIL (browser): chromium --dump-dom failed" >&2; exit 1; }
