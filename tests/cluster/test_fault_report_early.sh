#!/bin/bash
# Fault matrix (docs/reliability.md): the report started while a phase is still writing (an
# operator runs it by hand before the pipeline ended, or a dependency was lost). The run
# directory then holds smoke.parts/ (checkpoints and heartbeats) and no smoke.h5: the report
# must say the phase is still running, with a verdict that is not PASS, and must not disturb
# the phase, whose own file is written as usual; a report run after the job ends reads it.
set -euo pipefail
# shellcheck source=tests/cluster/fault_lib.sh
source "$(dirname "$0")/fault_lib.sh"
root="$GPUACCEPT_RESULTS/fault-report-early-$$"
mkdir -p "$root/early"
submit_smoke "$root" "$root" GPUACCEPT_HEARTBEAT=1 -N2
run="$root/$job"
[[ ! -e $run/smoke.h5 ]] || { echo "smoke.h5 already written: the phase ended too soon for this test"; exit 1; }
report_fails "$run" "$root/early"
summary_py "$root/early" '
assert "the phase is still running" in json.dumps(s), "the early report does not say smoke is still running"
'
squeue -h -j "$job" | grep -q . || { echo "the job ended before the early report finished: nothing shown"; exit 1; }
wait_job_gone "$job" 120 || { cat "$log"; scancel "$job"; echo "the job did not end"; exit 1; }
cat "$log"
"$RESULTS_CHECK" "$run/smoke.h5" --complete yes --record-status shared_fs=PASS --no-status ERROR
set +e
"$GPUACCEPT_BIN/gpuaccept-report" "$run" --no-history --expect-phases smoke >"$root/late.out" 2>&1
rc=$?
set -e
# No GPU here: INCOMPLETE (3) is the healthy verdict of a CPU-only run.
[[ $rc == 3 ]] || { cat "$root/late.out"; echo "the report after the job ended: exit code $rc, expected 3"; exit 1; }
summary_py "$run" 'assert "still running" not in json.dumps(s), "the late report still says running"'
rm -rf "$root"
echo "report while a phase is writing: ok"
