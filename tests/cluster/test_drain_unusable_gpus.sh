#!/bin/bash
# Issue 39: a node whose GPUs are unusable ends in drain.sh. On the two-node cluster discover
# runs with Slurm's word that gpa-node2 has one GPU for the job (SLURM_GPUS_ON_NODE=1, as a
# batch job given one GPU sees it) where no NVML loads, which is gpa-node2 with a broken CUDA
# stack; gpa-node1 was given none. Rank 0 writes gpus_per_node about each node (rank -1, the
# node named): gpa-node2's FAILs, and the report drains gpa-node2, and only it, with the check
# as the reason.
set -euo pipefail
root="$GPUACCEPT_RESULTS/unusable-gpus-$$"
run_id="unusable-$$"
run="$root/$run_id"
mkdir -p "$root"
fail() { echo "FAIL (drain_unusable_gpus): $*" >&2; exit 1; }

# The wrapper runs inside each task: only gpa-node2's rank sees the GPU allocation.
set +e
srun -N2 --ntasks-per-node=1 --mpi=pmix bash -c \
  'if [ "$(hostname)" = gpa-node2 ]; then export SLURM_GPUS_ON_NODE=1; fi; exec "$0" "$@"' \
  "$GPUACCEPT_BIN/gpuaccept-discover" --results "$root" --run-id "$run_id" \
  --config "$GPUACCEPT_SOURCE/configs/local.yaml" >"$root/discover.log" 2>&1  # the test cluster's fabric is TCP on purpose
set -e
"$RESULTS_CHECK" "$run/discover.h5" --ranks 2 --hosts 2 --record-status gpus_per_node=FAIL \
  --message-contains "gpus_per_node=0 GPUs visible to the job's ranks, Slurm allocated 1"

set +e
"$GPUACCEPT_BIN/gpuaccept-report" "$run" --no-history >"$root/report.log" 2>&1
rc=$?
set -e
[[ $rc == 1 ]] || { cat "$root/report.log"; fail "report exit code $rc, expected 1 (FAIL)"; }
[[ $(cat "$run/bad-nodes.txt") == gpa-node2 ]] || fail "bad-nodes.txt: '$(cat "$run/bad-nodes.txt")', expected gpa-node2"
grep -q "^scontrol update NodeName='gpa-node2' State=DRAIN Reason='gpuaccept $run_id: FAIL gpus_per_node" "$run/drain.sh" ||
  { cat "$run/drain.sh"; fail "drain.sh does not drain gpa-node2 for gpus_per_node"; }
[[ $(grep -c '^scontrol' "$run/drain.sh") == 1 ]] || fail "drain.sh drains more than gpa-node2"
sh -n "$run/drain.sh" || fail "drain.sh is not valid sh"
python3 - "$run/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
d = s["nodes_to_drain"]
assert [n["node"] for n in d["nodes"]] == ["gpa-node2"], d
assert "NVML" in d["nodes"][0]["first_problem"], d
r = [c for c in s["checks"] if c["test"] == "gpus_per_node" and c["node"] == "gpa-node2"]
assert len(r) == 1 and r[0]["status"] == "FAIL" and r[0]["rank"] == -1, r
assert s["unattributed_failures"] == 0, s["unattributed_failures"]
PY
rm -rf "$root"
echo "drain_unusable_gpus: ok"
