#!/bin/bash
# The operator's loop over time (issue 19, parts 3 and 4) on the two-node cluster: three
# runs (the second with a fault injected on gpa-node2), each report adding its row to
# <results>/history.jsonl; `--history` rendering history.html; `--baseline auto` finding the
# newest PASS run on the same nodes; `--metrics` written in the Prometheus text format and
# read back by the prometheus_client parsers (Debian's python3-prometheus-client).
set -euo pipefail
src="$GPUACCEPT_SOURCE"
root="$GPUACCEPT_RESULTS/history-test-$$"
mkdir -p "$root"
fail() { echo "FAIL (history): $*" >&2; exit 1; }

run() {  # run ID [smoke flags...]: discover and smoke on both nodes, then the report
  local id=$1
  shift
  for phase in discover smoke; do
    local extra=()
    [[ $phase == smoke ]] && extra=("$@")
    srun -N2 --ntasks-per-node=1 --mpi=pmix "$GPUACCEPT_BIN/gpuaccept-$phase" --config "$src/configs/local.yaml" \
      --results "$root" --run-id "$id" "${extra[@]}" >"$root/$id-$phase.log" 2>&1 || true
  done
  "$GPUACCEPT_BIN/gpuaccept-report" "$root/$id" --baseline auto --metrics "$root/$id.prom" >"$root/$id-report.log" 2>&1 || true
}
run first
run second --debug-fail-node gpa-node2
run third

rows=$(wc -l <"$root/history.jsonl")
[[ $rows == 3 ]] || fail "history.jsonl has $rows rows, expected 3"
/usr/bin/python3 - "$root/history.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["run"] for r in rows] == ["first", "second", "third"], [r["run"] for r in rows]
assert [r["drain"] for r in rows] == [[], ["gpa-node2"], []], [r["drain"] for r in rows]
assert all(sorted(r["nodes"]) == ["gpa-node1", "gpa-node2"] for r in rows), [r["nodes"] for r in rows]
PY
# No GPU here, so no run is PASS: --baseline auto says it found none rather than guessing.
grep -q -- "--baseline auto: no earlier PASS run on the same nodes" "$root/third-report.log" \
  || fail "--baseline auto: $(grep -i baseline "$root/third-report.log")"

"$GPUACCEPT_BIN/gpuaccept-report" --history "$root" >"$root/history.log" 2>&1 || { cat "$root/history.log"; fail "--history failed"; }
grep -q "history.html (3 runs)" "$root/history.log" || fail "$(cat "$root/history.log")"
grep -q 'id="recurring"' "$root/history.html" || fail "history.html has no recurring-failures section"
grep -q '<code>second</code>' "$root/history.html" || fail "history.html does not list the run 'second'"

/usr/bin/python3 - "$root/second.prom" <<'PY'
import sys
try:
    from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics
    from prometheus_client.parser import text_string_to_metric_families as prometheus
except ImportError:
    sys.exit("python3-prometheus-client is not installed (.ci/packages.txt lists it)")
text = open(sys.argv[1]).read()
for parse in (openmetrics, prometheus):
    families = {f.name: f for f in parse(text)}
    states = {s.labels["node"]: s.labels["state"] for s in families["gpuaccept_node_state"].samples}
    assert states == {"gpa-node1": "ok", "gpa-node2": "drain"}, states
    info = families["gpuaccept_run_info"].samples[0].labels
    assert info["run"] == "second" and info["verdict"] == "FAIL", info
    assert families["gpuaccept_run_passed"].samples[0].value == 0
PY
rm -rf "$root"
echo "history: ok"
