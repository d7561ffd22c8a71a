#!/bin/bash
# One node set per pipeline (issue 38, point 1) on the two-node cluster:
# 1. A pipeline of one node: while discover runs, its next index is held; once discover ended,
#    another job takes discover's node, and then the index is released. It must wait for that
#    node (pinned by sbatch/pipeline.sbatch), not move to the idle other node, as it did before
#    the pinning.
# 2. A run whose phases did run on different nodes (started by hand): the report says so,
#    INCOMPLETE, naming per node the phases that did not run there.
set -euo pipefail
src="$GPUACCEPT_SOURCE"
root="$GPUACCEPT_RESULTS/same-nodes-test-$$"
mkdir -p "$root"
fail() { echo "FAIL (same nodes): $*" >&2; exit 1; }
blocker=""
trap '[ -z "$blocker" ] || scancel "$blocker" 2>/dev/null || true' EXIT
state_of() { squeue -h -j "$1" -o %T 2>/dev/null | head -n 1; }
wait_gone() { for _ in $(seq 240); do [ -z "$(state_of "$1")" ] && return 0; sleep 0.5; done; fail "job $1 did not end"; }

# 1. The pipeline, its second index held at once (discover takes seconds to start and run).
out=$(make -s -f "$src/Makefile.slurm" acceptance NODES=1 GPUS_PER_NODE=0 TASKS_PER_NODE=1 PROFILE=local \
  PHASES="discover smoke" TIME=00:05:00 RESULTS="$root" BUILD="$(dirname "$GPUACCEPT_BIN")")
array=$(sed -n 's/^pipeline array job: *\([0-9]*\).*/\1/p' <<<"$out")
report=$(sed -n 's/^report job: *\([0-9]*\).*/\1/p' <<<"$out")
[[ -n $array && -n $report ]] || fail "no job ids in: $out"
scontrol hold "${array}_1" || fail "could not hold index 1 of $array (did discover end already?)"
echo "$out"
wait_gone "${array}_0"
log0="$root/logs/gpuaccept-${array}_0.out"
node=$(sed -n 's/^gpuaccept: phase discover .* on 1 nodes (\(gpa-node[0-9]*\)).*/\1/p' "$log0")
[[ -n $node ]] || fail "discover's log names no node: $(cat "$log0")"
other=gpa-node1
[[ $node == gpa-node1 ]] && other=gpa-node2

# Another job takes discover's node; then smoke may go.
blocker=$(sbatch --parsable -w "$node" -N1 --exclusive -o /dev/null --wrap 'sleep 12')
for _ in $(seq 40); do [[ $(state_of "$blocker") == RUNNING ]] && break; sleep 0.25; done
[[ $(state_of "$blocker") == RUNNING ]] || fail "the blocking job did not start on $node"
scontrol release "${array}_1"
for _ in $(seq 6); do
  sleep 1
  s=$(state_of "${array}_1")
  [[ $s == PENDING ]] || fail "smoke did not wait for $node while it was busy and $other idle: state $s"
done
sinfo -h -n "$other" -o %t | grep -qx idle || fail "$other was not idle: the wait proves nothing"
grep -q "indices 1 pinned to $node" "$log0" || fail "discover did not say it pinned index 1: $(cat "$log0")"
scontrol show job "${array}_1" | grep -q "ReqNodeList=$node " || fail "index 1 is not pinned: $(scontrol show job "${array}_1")"
wait_gone "$report"
log1="$root/logs/gpuaccept-${array}_1.out"
grep -q "^gpuaccept: phase smoke .* on 1 nodes ($node)" "$log1" || fail "smoke did not run on $node: $(head -n 3 "$log1")"
run="$root/$array"
"$RESULTS_CHECK" "$run/smoke.h5" --hosts 1
dump=$(h5dump -a hosts "$run/smoke.h5")
grep -q "\"$node\"" <<<"$dump" || fail "smoke.h5 does not name $node: $dump"
python3 - "$run/summary.json" "$node" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
node = sys.argv[2]
c = s["node_coverage"]
assert c["same_nodes"] is True and c["missed"] == {}, c
assert c["phases"] == {"discover": node, "smoke": node}, c
assert not any("different nodes" in r for r in s["incomplete_reasons"]), s["incomplete_reasons"]
PY

# 2. Phases that ran on different nodes: the report's own check.
moved="moved-$$"
srun -N1 -w gpa-node1 --ntasks-per-node=1 --mpi=pmix "$GPUACCEPT_BIN/gpuaccept-discover" --config "$src/configs/local.yaml" \
  --results "$root" --run-id "$moved" >"$root/moved-discover.log" 2>&1 || fail "discover by hand: $(cat "$root/moved-discover.log")"
srun -N1 -w gpa-node2 --ntasks-per-node=1 --mpi=pmix "$GPUACCEPT_BIN/gpuaccept-smoke" --config "$src/configs/local.yaml" \
  --results "$root" --run-id "$moved" >"$root/moved-smoke.log" 2>&1 || fail "smoke by hand: $(cat "$root/moved-smoke.log")"
set +e
"$GPUACCEPT_BIN/gpuaccept-report" "$root/$moved" >"$root/moved-report.log" 2>&1
rc=$?
set -e
[[ $rc == 3 ]] || fail "report on phases on different nodes: exit $rc, expected 3 (INCOMPLETE): $(cat "$root/moved-report.log")"
grep -q "phases on different nodes: gpa-node1 did not run smoke; gpa-node2 did not run discover" "$root/moved-report.log" ||
  fail "the report's log does not say where the phases ran: $(cat "$root/moved-report.log")"
python3 - "$root/$moved/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
c = s["node_coverage"]
assert c["same_nodes"] is False, c
assert c["missed"] == {"gpa-node1": ["smoke"], "gpa-node2": ["discover"]}, c
assert any(r.startswith("the phases ran on different nodes") for r in s["incomplete_reasons"]), s["incomplete_reasons"]
assert s["good_nodes"]["nodes"] == [], s["good_nodes"]
PY
grep -q 'id="node-coverage"' "$root/$moved/report.html" || fail "report.html has no 'Phases on different nodes' section"
rm -rf "$root"
echo "same nodes: ok (smoke waited for $node)"
