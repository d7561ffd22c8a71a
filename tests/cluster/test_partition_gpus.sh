#!/bin/bash
# GPUs per node from the partition (issue 38, point 5; sbatch/partition_gpus.sh): with no
# GPUS_PER_NODE, the jobs ask for what the GRES of their nodes hold, and the Makefile says so.
#   1. The fixture's cluster (no GRES): 0 GPUs, one rank per node; the job asks for no GPU.
#   2. Restarted with Gres=gpu:4 on both nodes (fake GPU devices, tests/cluster/up): 4 GPUs
#      and 4 ranks per node, a job sbatch takes; the old default, 8, is refused by sbatch as
#      the issue saw ("Invalid generic resource (gres) specification").
#   3. Restarted with gpu:2 on gpa-node2 (GPUACCEPT_CLUSTER_GRES_LAST_NODE): the nodes differ,
#      and the Makefile refuses, naming the counts and what to set; NODELIST=gpa-node1 or
#      GPUS_PER_NODE= settles it.
# At the end, whatever happens, the cluster is restarted from its own configuration.
set -euo pipefail
src="$GPUACCEPT_SOURCE"
root="$GPUACCEPT_RESULTS/partition-gpus-$$"
mkdir -p "$root"
fail() { echo "FAIL (partition gpus): $*" >&2; exit 1; }
restore() {
  "$src/tests/cluster/down" >/dev/null 2>&1 || true
  env -u GPUACCEPT_CLUSTER_GRES -u GPUACCEPT_CLUSTER_GRES_LAST_NODE "$src/tests/cluster/up" >/dev/null 2>&1 || echo "partition gpus: the cluster did not come back up" >&2
  rm -rf "$root"
}
trap restore EXIT
make_args=(-s -f "$src/Makefile.slurm" NODES=1 PROFILE=local TIME=00:05:00 RESULTS="$root" BUILD="$(dirname "$GPUACCEPT_BIN")")
job_of() { sed -n 's/^discover job: *\([0-9]*\);.*/\1/p' <<<"$1"; }

# 1. No GRES.
out=$(make "${make_args[@]}" discover 2>&1)
echo "$out"
grep -q "GPUS_PER_NODE=0 TASKS_PER_NODE=1: the 2 node(s) of the default partition have no GPU in their GRES (sinfo)" <<<"$out" ||
  fail "no word on the GPUs chosen"
job=$(job_of "$out")
[[ -n $job ]] || fail "no job"
! grep -q -- "--gpus-per-node" <<<"$out" || fail "a job without GPUs asked for some"
scancel "$job" 2>/dev/null || true

# 2. Four GPUs on every node.
"$src/tests/cluster/down" >/dev/null 2>&1
eval "$(GPUACCEPT_CLUSTER_GRES=gpu:4 "$src/tests/cluster/up")"
out=$(make "${make_args[@]}" discover 2>&1)
echo "$out"
grep -q "GPUS_PER_NODE=4 TASKS_PER_NODE=4: the 2 node(s) of the default partition have 4 GPU(s) each in their GRES (sinfo)" <<<"$out" ||
  fail "4 GPUs not chosen"
job=$(job_of "$out")
[[ -n $job ]] || fail "sbatch did not take the job"
# Slurm 22.05 shows TresPerNode=gres:gpu:4, 24.11 gres/gpu:4.
scontrol show job "$job" | grep -Eq "TresPerNode=gres[:/]gpu:4" || fail "the job does not ask for 4 GPUs: $(scontrol show job "$job")"
scancel "$job" 2>/dev/null || true
if make "${make_args[@]}" discover GPUS_PER_NODE=8 >"$root/eight.log" 2>&1; then fail "8 GPUs per node were accepted on 4-GPU nodes"; fi
grep -q "Invalid generic resource (gres) specification\|Requested node configuration is not available" "$root/eight.log" ||
  fail "sbatch's refusal of 8 GPUs: $(cat "$root/eight.log")"

# 3. Nodes that differ.
"$src/tests/cluster/down" >/dev/null 2>&1
eval "$(GPUACCEPT_CLUSTER_GRES=gpu:4 GPUACCEPT_CLUSTER_GRES_LAST_NODE=gpu:2 "$src/tests/cluster/up")"
sinfo -h -N -n gpa-node2 -o %G | grep -q "gpu:2" || fail "gpa-node2's GRES: $(sinfo -h -N -o '%N %G')"
if make "${make_args[@]}" discover >"$root/differ.log" 2>&1; then fail "nodes with 4 and 2 GPUs were taken as alike"; fi
cat "$root/differ.log"
grep -q "the nodes of the default partition do not have the same GPUs" "$root/differ.log" || fail "no clear refusal"
grep -q "  4 GPU(s): 1 node(s): gpa-node1" "$root/differ.log" || fail "the 4-GPU node is not named"
grep -q "  2 GPU(s): 1 node(s): gpa-node2" "$root/differ.log" || fail "the 2-GPU node is not named"
grep -q "set GPUS_PER_NODE=" "$root/differ.log" || fail "nothing says what to set"
! grep -q "discover job:" "$root/differ.log" || fail "submitted anyway"
out=$(make "${make_args[@]}" discover NODELIST=gpa-node1 2>&1)
grep -q "GPUS_PER_NODE=4 TASKS_PER_NODE=4: the 1 node(s) of the default partition, nodes gpa-node1 have 4 GPU(s)" <<<"$out" ||
  fail "NODELIST=gpa-node1: $out"
scancel "$(job_of "$out")" 2>/dev/null || true
out=$(make "${make_args[@]}" discover GPUS_PER_NODE=2 2>&1)
grep -q "GPUS_PER_NODE=2 TASKS_PER_NODE=2 (as given)" <<<"$out" || fail "GPUS_PER_NODE=2: $out"
scancel "$(job_of "$out")" 2>/dev/null || true
echo "partition gpus: ok"
