#!/bin/bash
# The whole acceptance pipeline on the two-node cluster through Makefile.slurm: the job
# array runs every phase in order (GPU phases SKIP with their reason), the report job
# runs after the array, and its HTML, opened in headless Chromium, shows the verdict and
# a row for every phase. Leaves report.png in the run directory for a person to look at.
set -euo pipefail
src="$GPUACCEPT_SOURCE"
results="$GPUACCEPT_RESULTS/pipeline-test-$$"
phases=(discover smoke nccl-scaling ddp fsdp-lora)
fail() { echo "FAIL (pipeline): $*" >&2; exit 1; }

out=$(make -s -f "$src/Makefile.slurm" acceptance WAIT=1 NODES=2 GPUS_PER_NODE=0 TASKS_PER_NODE=2 \
  PROFILE=local RESULTS="$results" BUILD="$(dirname "$GPUACCEPT_BIN")" TIME=00:10:00)
echo "$out"
array=$(sed -n 's/^pipeline array job: *\([0-9]*\).*/\1/p' <<<"$out")
[[ -n $array ]] || fail "no array job id printed"
run="$results/$array"

# Every phase ran, in its own array task, and wrote its file.
for i in "${!phases[@]}"; do
  log="$results/logs/gpuaccept-${array}_$i.out"
  [[ -f $log ]] || fail "no log $log for ${phases[$i]}"
  grep -q "pipeline step $((i + 1))/5: ${phases[$i]}" "$log" || fail "$log is not step $((i + 1)) (${phases[$i]})"
  [[ -f $run/${phases[$i]}.h5 ]] || fail "${phases[$i]}.h5 missing from $run"
done
"$RESULTS_CHECK" "$run/nccl-scaling.h5" --all-status SKIP
"$RESULTS_CHECK" "$run/smoke.h5" --record-status shared_fs=PASS --no-status FAIL --no-status ERROR

# The report job ran after the array: it saw all five files, none missing or partial.
for f in report.html summary.json junit.xml resume.sh; do [[ -s $run/$f ]] || fail "$f not written"; done
[[ -f $run/good-nodes.txt ]] || fail "good-nodes.txt not written"
python3 - "$run/summary.json" "${phases[@]}" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
want = sys.argv[2:]
def need(cond, what):
    if not cond:
        print("FAIL (pipeline):", what, file=sys.stderr)
        sys.exit(1)
got = [p["phase"] for p in s["phases"]]
need(got == want, f"phases {got}, expected {want}")
for p in s["phases"]:
    need(all(f["state"] == "complete" for f in p["files"]), f"{p['phase']}: files {p['files']}")
status = {p["phase"]: p["status"] for p in s["phases"]}
need(status["discover"] == "PASS" and status["smoke"] == "PASS", f"statuses {status}")
need(all(status[p] == "SKIP" for p in ["nccl-scaling", "ddp", "fsdp-lora"]), f"statuses {status}")
# GPU phases measured nothing here: the run is not an acceptance.
need(s["verdict"] == "INCOMPLETE", f"verdict {s['verdict']}, expected INCOMPLETE")
need(s["skipped_phases"] == ["nccl-scaling", "ddp", "fsdp-lora"], f"skipped {s['skipped_phases']}")
# Every phase on the one node set; none handed back, since no GPU was measured.
need(s["node_coverage"]["same_nodes"] and len(s["node_coverage"]["phases"]) == 5, f"coverage {s['node_coverage']}")
need(s["good_nodes"]["nodes"] == [], f"good nodes {s['good_nodes']}")
PY
report_log=$(ls "$results"/logs/gpuaccept-report-*.out)
grep -q "report .*report.html (exit code 3)" "$report_log" || fail "report job: $(tail -2 "$report_log")"
grep -q "testcase" "$run/junit.xml" || fail "junit.xml has no test case"

set +e
"$src/tests/report/chromium.sh" "$run/report.html" "$run/report.png" "$run/dom.html"
rc=$?
set -e
[[ $rc == 77 ]] && { echo "pipeline: ok (no chromium: the browser part was skipped)"; exit 0; }
[[ $rc == 0 ]] || exit $rc
python3 - "$run/dom.html" "${phases[@]}" <<'PY'
import re, sys
dom = open(sys.argv[1], encoding="utf-8").read()
def need(cond, what):
    if not cond:
        print("FAIL (browser):", what, file=sys.stderr)
        sys.exit(1)
need(re.search(r'class="verdict-word">INCOMPLETE<', dom), "the verdict INCOMPLETE is not shown")
for phase in sys.argv[2:]:
    need(f'<tr class="phase-row" data-phase="{phase}">' in dom, f"no row for phase {phase}")
need("gpa-node1" in dom and "gpa-node2" in dom, "the nodes are not shown")
need("<script" not in dom.lower(), "a <script> element exists in the DOM")
PY
echo "pipeline: ok, screenshot $run/report.png"
