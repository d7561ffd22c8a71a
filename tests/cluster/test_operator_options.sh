#!/bin/bash
# The operator's Slurm options (issue 38, point 3): RESERVATION, NODELIST, EXCLUDE, QOS and
# CONSTRAINT reach every job of a pipeline (the array and the report job; the report job gets
# no --nodelist, which would give it every listed node), the jobs run where they say, the
# phase files record the reservation, and bad values are refused by name before sbatch.
# gpa-node2 is the "repaired" node: in a maintenance reservation, with a feature of its own.
# The local cluster keeps no QOS (accounting_storage/none: slurmctld takes --qos and records
# nothing), so for QOS only the option given to sbatch is checked.
set -euo pipefail
src="$GPUACCEPT_SOURCE"
root="$GPUACCEPT_RESULTS/operator-options-test-$$"
res="gpa-repair-$$"
mkdir -p "$root"
fail() { echo "FAIL (operator options): $*" >&2; exit 1; }
cleanup() {
  scontrol delete ReservationName="$res" 2>/dev/null || true
  scontrol update NodeName=gpa-node2 AvailableFeatures= ActiveFeatures= 2>/dev/null || true
}
trap cleanup EXIT
scontrol create reservation ReservationName="$res" Nodes=gpa-node2 StartTime=now Duration=30 Users=root Flags=maint,ignore_jobs
scontrol update NodeName=gpa-node2 AvailableFeatures=gpa-repaired ActiveFeatures=gpa-repaired
make_args=(-s -f "$src/Makefile.slurm" GPUS_PER_NODE=0 TASKS_PER_NODE=1 PROFILE=local TIME=00:05:00
           RESULTS="$root" BUILD="$(dirname "$GPUACCEPT_BIN")")

out=$(make "${make_args[@]}" acceptance WAIT=1 PHASES=discover NODELIST=gpa-node2 EXCLUDE=gpa-node1 \
  RESERVATION="$res" QOS=normal CONSTRAINT=gpa-repaired 2>&1)
echo "$out"
array=$(sed -n 's/^pipeline array job: *\([0-9]*\).*/\1/p' <<<"$out")
report=$(sed -n 's/^report job: *\([0-9]*\).*/\1/p' <<<"$out")
[[ -n $array && -n $report ]] || fail "no job ids"
for o in --nodes=1 --time=00:05:00 --nodelist=gpa-node2 "--reservation=$res" --qos=normal --constraint=gpa-repaired --exclude=gpa-node1; do
  grep -q "^its options: .* $o\( \|$\)" <<<"$out" || fail "the array's options lack $o"
done
for o in "--reservation=$res" --qos=normal --constraint=gpa-repaired --exclude=gpa-node1; do
  grep -q "^report job: .* $o\( \|;\|)\)" <<<"$out" || fail "the report job's options lack $o"
done
! grep -q "^report job: .*--nodelist" <<<"$out" || fail "the report job was given the node list"

# The controller's record of each job (kept MinJobAge, 300 s, after it ended).
for job in "${array}_0" "$report"; do
  info=$(scontrol show job "$job")
  grep -q "Reservation=$res" <<<"$info" || fail "job $job did not run in $res: $info"
  grep -q "Features=gpa-repaired " <<<"$info" || fail "job $job has no constraint: $info"
  grep -q "ExcNodeList=gpa-node1" <<<"$info" || fail "job $job does not exclude gpa-node1: $info"
  grep -q "NodeList=gpa-node2$" <<<"$info" || fail "job $job did not run on gpa-node2: $info"
done
scontrol show job "${array}_0" | grep -q "ReqNodeList=gpa-node2 " || fail "the array does not require gpa-node2"
run="$root/$array"
dump=$(h5dump -a slurm_reservation "$run/discover.h5")
grep -q "\"$res\"" <<<"$dump" || fail "discover.h5 does not record the reservation: $dump"
python3 - "$run/summary.json" "$res" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
assert s["node_coverage"]["phases"] == {"discover": "gpa-node2"}, s["node_coverage"]
assert s["good_nodes"]["reservation"] == sys.argv[2], s["good_nodes"]
PY

# Bad values: refused by name, nothing submitted.
refused() {  # EXPECTED-MESSAGE MAKE-ARGS...
  local want=$1
  shift
  if make "${make_args[@]}" discover "$@" >"$root/refused.log" 2>&1; then fail "accepted: $*"; fi
  grep -qF "$want" "$root/refused.log" || fail "no clear error for $*: $(cat "$root/refused.log")"
  ! grep -q "discover job:" "$root/refused.log" || fail "submitted anyway: $*"
}
refused "NODES=1 but the node list gpa-node[1-2] names 2 nodes" NODES=1 "NODELIST=gpa-node[1-2]"
refused "NODELIST='gpa-node1;touch $root/pwned' is not a Slurm hostlist" "NODELIST=gpa-node1;touch $root/pwned"
refused "RESERVATION='a b' is not a reservation name" "RESERVATION=a b"
refused "CONSTRAINT='x\$(id)' is not a Slurm constraint" "CONSTRAINT=x\$\$(id)"
refused "ONLY_FROM= and NODELIST= both name the nodes" NODELIST=gpa-node1 ONLY_FROM="$root"
refused "TIME='2 hours' is not a Slurm time" "TIME=2 hours"
[[ ! -e $root/pwned ]] || fail "a node list ran a command"
rm -rf "$root"
echo "operator options: ok"
