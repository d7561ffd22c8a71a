#!/bin/bash
# PIPELINE_TIME bounds the whole pipeline (issue 38, point 3), counted from its first phase's
# start (sbatch/pipeline.sbatch): discover, starting with 40 s of it left and TIME=00:05:00,
# lowers its own time limit (to a minute, the least Slurm takes); smoke, held until the 40 s
# are spent, then released, runs nothing and leaves smoke.not-run, which the report shows as
# smoke's SKIP with the reason: INCOMPLETE, not an ERROR.
set -euo pipefail
src="$GPUACCEPT_SOURCE"
root="$GPUACCEPT_RESULTS/pipeline-time-test-$$"
mkdir -p "$root"
fail() { echo "FAIL (pipeline time): $*" >&2; exit 1; }
state_of() { squeue -h -j "$1" -o %T 2>/dev/null | head -n 1; }
wait_gone() { for _ in $(seq 240); do [ -z "$(state_of "$1")" ] && return 0; sleep 0.5; done; fail "job $1 did not end"; }

out=$(make -s -f "$src/Makefile.slurm" acceptance NODES=1 GPUS_PER_NODE=0 TASKS_PER_NODE=1 PROFILE=local \
  PHASES="discover smoke" TIME=00:05:00 PIPELINE_TIME=00:00:40 RESULTS="$root" BUILD="$(dirname "$GPUACCEPT_BIN")")
array=$(sed -n 's/^pipeline array job: *\([0-9]*\).*/\1/p' <<<"$out")
report=$(sed -n 's/^report job: *\([0-9]*\).*/\1/p' <<<"$out")
[[ -n $array && -n $report ]] || fail "no job ids in: $out"
scontrol hold "${array}_1" || fail "could not hold index 1 of $array"
echo "$out"
grep -q "^time: *TIME=00:05:00 for each of the 2 phases; PIPELINE_TIME=00:00:40 for the whole pipeline" <<<"$out" ||
  fail "make does not say how the time is bounded"
wait_gone "${array}_0"
log0="$root/logs/gpuaccept-${array}_0.out"
grep -q "time limit lowered to 1 min: [0-9]* s are left of PIPELINE_TIME=00:00:40" "$log0" || fail "discover kept its limit: $(cat "$log0")"
run="$root/$array"
[[ -s $run/.pipeline-start ]] || fail "no record of the pipeline's start"
started=$(<"$run/.pipeline-start")
while (($(date +%s) <= started + 41)); do sleep 1; done
scontrol release "${array}_1"
wait_gone "$report"
log1="$root/logs/gpuaccept-${array}_1.out"
grep -q "PIPELINE_TIME=00:00:40 was spent before smoke could start .*: smoke not run" "$log1" || fail "smoke's log: $(cat "$log1")"
[[ ! -e $run/smoke.h5 ]] || fail "smoke ran"
python3 - "$run/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
assert s["verdict"] == "INCOMPLETE", s["verdict"]
smoke = [p for p in s["phases"] if p["phase"] == "smoke"]
assert smoke and smoke[0]["status"] == "SKIP", s["phases"]
skips = [c for c in s["checks"] if c["phase"] == "smoke"]
assert len(skips) == 1 and skips[0]["status"] == "SKIP", skips
assert skips[0]["message"].startswith("not run: PIPELINE_TIME=00:00:40 was spent before smoke could start"), skips
assert "smoke" in s["skipped_phases"], s["skipped_phases"]
PY
rm -rf "$root"
echo "pipeline time: ok"
