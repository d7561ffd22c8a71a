#!/bin/bash
# The operator's loop on the two-node cluster (issue 19, part 1): smoke with a fault injected
# on gpa-node2 (--debug-fail-node), the report's bad-nodes.txt and drain.sh naming it,
# Makefile.slurm's ONLY_FROM= and EXCLUDE_FROM= choosing nodes for a re-run from that report,
# and `make drain` draining gpa-node2 in the real slurmctld with the report's reason.
# gpa-node2 is resumed at the end, whatever happens, for the tests after this one.
set -euo pipefail
src="$GPUACCEPT_SOURCE"
root="$GPUACCEPT_RESULTS/drain-test-$$"
run_id="drain-$$"
run="$root/$run_id"
mkdir -p "$root"
fail() { echo "FAIL (drain): $*" >&2; exit 1; }
trap 'scontrol update NodeName=gpa-node2 State=RESUME 2>/dev/null || true' EXIT
make_args=(-s -f "$src/Makefile.slurm" GPUS_PER_NODE=0 TASKS_PER_NODE=1 NODES=1 PROFILE=local
           RESULTS="$root/reruns" BUILD="$(dirname "$GPUACCEPT_BIN")" TIME=00:05:00)

# 1. A node with a fault: every rank on gpa-node2 records FAIL.
set +e
srun -N2 --ntasks-per-node=2 --mpi=pmix "$GPUACCEPT_BIN/gpuaccept-smoke" --config "$src/configs/local.yaml" \
  --results "$root" --run-id "$run_id" --debug-fail-node gpa-node2 >"$root/smoke.log" 2>&1
set -e
"$RESULTS_CHECK" "$run/smoke.h5" --record-status debug_fault=FAIL --message-contains "debug_fault=injected"

# 2. The report names it, and only it, in the files an operator acts on.
set +e
"$GPUACCEPT_BIN/gpuaccept-report" "$run" >"$root/report.log" 2>&1
rc=$?
set -e
[[ $rc == 1 ]] || { cat "$root/report.log"; fail "report exit code $rc, expected 1 (FAIL)"; }
[[ $(cat "$run/bad-nodes.txt") == gpa-node2 ]] || fail "bad-nodes.txt: '$(cat "$run/bad-nodes.txt")'"
[[ ! -s $run/watch-nodes.txt ]] || fail "watch-nodes.txt: '$(cat "$run/watch-nodes.txt")'"
grep -q "nodes to drain: gpa-node2" "$root/report.log" || fail "the report's log does not name the node to drain"
grep -q "^scontrol update NodeName='gpa-node2' State=DRAIN Reason='gpuaccept $run_id: FAIL debug_fault" "$run/drain.sh" \
  || { cat "$run/drain.sh"; fail "drain.sh has no drain line for gpa-node2"; }
[[ $(grep -c '^scontrol' "$run/drain.sh") == 1 ]] || fail "drain.sh drains more than gpa-node2"
sh -n "$run/drain.sh" || fail "drain.sh is not valid sh"
python3 - "$run/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
d = s["nodes_to_drain"]
assert d["hostlist"] == "gpa-node2" and [n["node"] for n in d["nodes"]] == ["gpa-node2"], d
assert d["nodes"][0]["first_problem"].startswith("FAIL debug_fault"), d
assert s["nodes_to_watch"]["nodes"] == [], s["nodes_to_watch"]
PY
grep -q 'id="node-actions"' "$run/report.html" || fail "report.html has no 'Nodes to take out' section"

# 3. Re-runs chosen from that report, submitted as an operator would (one node each).
job_of() { sed -n 's/^discover job: *\([0-9]*\).*/\1/p' <<<"$1"; }
wait_job() { for _ in $(seq 240); do squeue -h -j "$1" 2>/dev/null | grep -q . || return 0; sleep 0.5; done; fail "job $1 did not end"; }
out=$(make "${make_args[@]}" discover ONLY_FROM="$run" 2>&1)  # the node selection is said on stderr
echo "$out"
grep -q "node selection: --nodelist=gpa-node2 --nodes=1" <<<"$out" || fail "ONLY_FROM did not select gpa-node2"
job=$(job_of "$out"); [[ -n $job ]] || fail "no job id from 'make discover ONLY_FROM'"
wait_job "$job"
"$RESULTS_CHECK" "$root/reruns/$job/discover.h5" --hosts 1
dump=$(h5dump "$root/reruns/$job/discover.h5")  # (grep -q in a pipe would SIGPIPE h5dump under pipefail)
grep -q '"gpa-node2"' <<<"$dump" || fail "the ONLY_FROM re-run did not run on gpa-node2"
! grep -q '"gpa-node1"' <<<"$dump" || fail "the ONLY_FROM re-run ran on gpa-node1"

out=$(make "${make_args[@]}" discover EXCLUDE_FROM="$run" 2>&1)
echo "$out"
grep -q "node selection: --exclude=gpa-node2" <<<"$out" || fail "EXCLUDE_FROM did not exclude gpa-node2"
job=$(job_of "$out"); [[ -n $job ]] || fail "no job id from 'make discover EXCLUDE_FROM'"
# The controller keeps an ended job's record for MinJobAge (300 s by default).
scontrol show job "$job" | grep -q "ExcNodeList=gpa-node2" || fail "job $job does not exclude gpa-node2: $(scontrol show job "$job")"
wait_job "$job"
dump=$(h5dump "$root/reruns/$job/discover.h5")
! grep -q '"gpa-node2"' <<<"$dump" || fail "the EXCLUDE_FROM re-run ran on gpa-node2"

# A bad-nodes.txt that is not a hostlist never reaches sbatch.
bad="$root/bad-run"; mkdir -p "$bad"; printf 'gpa-node1;touch %s/pwned\n' "$root" >"$bad/bad-nodes.txt"
if make "${make_args[@]}" discover EXCLUDE_FROM="$bad" >"$root/bad.log" 2>&1; then fail "a damaged bad-nodes.txt was accepted"; fi
grep -q "does not hold one Slurm hostlist" "$root/bad.log" || fail "no clear error for a damaged bad-nodes.txt: $(cat "$root/bad.log")"
[[ ! -e $root/pwned ]] || fail "the damaged bad-nodes.txt ran a command"

# 4. The deliberate step: drain, then the controller says so, with the report's reason.
make -s -f "$src/Makefile.slurm" drain RUN="$run"
node=$(scontrol show node gpa-node2)
grep -q "State=[A-Z+]*DRAIN" <<<"$node" || fail "gpa-node2 is not draining: $node"
grep -q "Reason=gpuaccept $run_id: FAIL debug_fault" <<<"$node" || fail "gpa-node2's reason: $(grep -o 'Reason=.*' <<<"$node")"
scontrol update NodeName=gpa-node2 State=RESUME
rm -rf "$root"
echo "drain: ok"
