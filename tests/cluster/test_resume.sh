#!/bin/bash
# Good nodes handed back (issue 38, point 4), along the README's repair flow on the two-node
# cluster: both nodes "repaired" and in a maintenance reservation, the acceptance run inside it,
# then `make resume` for the good nodes and `make drain` for the bad.
# 1. The real pipeline in the reservation: the local cluster has no GPU, so no node is good
#    (no GPU of it was measured): good-nodes.txt is empty and resume.sh hands back nothing.
# 2. Runs whose GPUs were measured (make-passed-run: the stand-in for a GPU cluster's run, the
#    report, resume.sh, drain.sh and Slurm real): gpa-node1 failed, gpa-node2 passed:
#    gpa-node2 leaves the reservation, gpa-node1 is drained and stays in it; a later run in
#    which gpa-node1 passed resumes it (drained before that run ended) and deletes the
#    emptied reservation; a run that ended before gpa-node1 was drained leaves it drained.
# Both nodes are resumed and the reservation deleted at the end, whatever happens.
set -euo pipefail
src="$GPUACCEPT_SOURCE"
root="$GPUACCEPT_RESULTS/resume-test-$$"
res="gpa-maint-$$"
mkdir -p "$root"
fail() { echo "FAIL (resume): $*" >&2; exit 1; }
cleanup() {
  scontrol delete ReservationName="$res" 2>/dev/null || true
  scontrol update NodeName=gpa-node1,gpa-node2 State=RESUME 2>/dev/null || true
}
trap cleanup EXIT
make_args=(-s -f "$src/Makefile.slurm" RESULTS="$root" BUILD="$(dirname "$GPUACCEPT_BIN")")
state() { scontrol show node "$1" | sed -n 's/^ *State=\([^ ]*\).*/\1/p'; }
res_nodes() { scontrol show reservation "$res" 2>/dev/null | sed -n 's/^ *Nodes=\([^ ]*\).*/\1/p'; }
utc() { date -u -d "$1" +%FT%TZ; }

# The repair flow's start: both nodes drained for repair (an earlier run's drain.sh), repaired,
# put in a maintenance reservation and resumed into it, so no user job lands on them.
scontrol update NodeName=gpa-node1,gpa-node2 State=DRAIN Reason="repair ticket 38"
scontrol create reservation ReservationName="$res" Nodes=gpa-node[1-2] StartTime=now Duration=30 Users=root Flags=maint,ignore_jobs
scontrol update NodeName=gpa-node1,gpa-node2 State=RESUME

# 1. The real pipeline in the reservation.
out=$(make "${make_args[@]}" acceptance WAIT=1 PHASES="discover smoke" RESERVATION="$res" GPUS_PER_NODE=0 TASKS_PER_NODE=1 \
  PROFILE=local TIME=00:05:00 2>&1)
echo "$out"
array=$(sed -n 's/^pipeline array job: *\([0-9]*\).*/\1/p' <<<"$out")
run="$root/$array"
[[ -f $run/good-nodes.txt && ! -s $run/good-nodes.txt ]] || fail "good-nodes.txt: '$(cat "$run/good-nodes.txt" 2>/dev/null)'"
grep -q "no GPU of it was measured" "$run/resume.sh" || fail "resume.sh does not say why no node is handed back"
make "${make_args[@]}" resume RUN="$run" | grep -q "no node passed every phase" || fail "make resume on a run without good nodes"
[[ $(res_nodes) == "gpa-node[1-2]" ]] || fail "the reservation changed: $(res_nodes)"
python3 - "$run/summary.json" "$res" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))["good_nodes"]
assert g["nodes"] == [] and g["reservation"] == sys.argv[2], g
assert sorted(h["node"] for h in g["held_back"]) == ["gpa-node1", "gpa-node2"], g
assert all(h["why"] == "no GPU of it was measured" for h in g["held_back"]), g
PY

# 2a. gpa-node1 failed, gpa-node2 passed.
a="$root/run-a"
"$MAKE_PASSED_RUN" "$a" --ended "$(utc now)" --reservation "$res" gpa-node1:fail gpa-node2
set +e
"$GPUACCEPT_BIN/gpuaccept-report" "$a" >"$root/report-a.log" 2>&1
rc=$?
set -e
[[ $rc == 1 ]] || fail "report on run a: exit $rc: $(cat "$root/report-a.log")"
[[ $(cat "$a/good-nodes.txt") == gpa-node2 ]] || fail "run a's good-nodes.txt: '$(cat "$a/good-nodes.txt")'"
[[ $(cat "$a/bad-nodes.txt") == gpa-node1 ]] || fail "run a's bad-nodes.txt: '$(cat "$a/bad-nodes.txt")'"
grep -q "nodes that passed every phase: gpa-node2 (make -f Makefile.slurm resume RUN=$a)" "$root/report-a.log" || fail "the report's log"
sh -n "$a/resume.sh" || fail "resume.sh is not valid sh"
out=$(make "${make_args[@]}" resume RUN="$a")
echo "$out"
grep -q "gpa-node2 is [A-Z+]*, not drained: nothing to resume" <<<"$out" || fail "gpa-node2's state"
grep -q "took gpa-node2 out of reservation $res; it keeps gpa-node1" <<<"$out" || fail "gpa-node2 not taken out of $res"
[[ $(res_nodes) == gpa-node1 ]] || fail "$res holds $(res_nodes), expected gpa-node1"
grep -q "took gpa-node2 out of reservation" "$a/resume.log" || fail "resume.log does not keep the output"
make "${make_args[@]}" drain RUN="$a"
[[ $(state gpa-node1) == *DRAIN* ]] || fail "gpa-node1 not drained: $(state gpa-node1)"

# 2b. After repair, gpa-node1 passes a run that ended after it was drained: resumed, and the
# reservation, empty then, deleted.
b="$root/run-b"
"$MAKE_PASSED_RUN" "$b" --ended "$(utc '+2 minutes')" --reservation "$res" gpa-node1
"$GPUACCEPT_BIN/gpuaccept-report" "$b" >"$root/report-b.log" 2>&1 || true
out=$(make "${make_args[@]}" resume RUN="$b")
echo "$out"
grep -q "resumed gpa-node1 (drained at .* for 'gpuaccept run-a: FAIL binding_gpu" <<<"$out" || fail "gpa-node1 not resumed"
[[ $(state gpa-node1) != *DRAIN* ]] || fail "gpa-node1 still drained: $(state gpa-node1)"
grep -q "deleted reservation $res: every node in it passed (gpa-node1)" <<<"$out" || fail "the emptied reservation was not deleted"
! scontrol show reservation "$res" >/dev/null 2>&1 || fail "$res still exists"

# 2c. A drain set after the run ended (a health check, Slurm, a person) knows something the run
# does not: resume.sh leaves that node drained and says so.
c="$root/run-c"
"$MAKE_PASSED_RUN" "$c" --ended "$(utc '-1 hour')" gpa-node1
"$GPUACCEPT_BIN/gpuaccept-report" "$c" >"$root/report-c.log" 2>&1 || true
scontrol update NodeName=gpa-node1 State=DRAIN Reason="Kill task failed"
out=$(make "${make_args[@]}" resume RUN="$c")
echo "$out"
grep -q "gpa-node1 left drained: drained at .*, after the run ended (.*), for 'Kill task failed'" <<<"$out" || fail "gpa-node1's later drain"
[[ $(state gpa-node1) == *DRAIN* ]] || fail "gpa-node1 was resumed over a later drain"
! grep -q "^release_from_reservation '" "$c/resume.sh" || fail "run c ran in no reservation"
rm -rf "$root"
echo "resume: ok"
