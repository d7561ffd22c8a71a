#!/bin/bash
# CPU binding as an operator sets it up, through `make -f Makefile.slurm smoke` (the fault the
# quick pipeline on two H100s showed: the GPU machine's test Slurm had TaskPlugin=task/none, so
# its two ranks shared every CPU and smoke's binding_cpu_exclusive FAILed; docs/gpu-tests.md).
#   1. The fixture's cluster (TaskPlugin=task/none): two ranks of a node share its CPUs, and
#      binding_cpu_exclusive FAILs naming both ranks and what to configure.
#   2. Restarted with TaskPlugin=task/affinity, `make ... CPUS_PER_TASK=1`: each rank is bound
#      to its own CPU, so binding_cpu_exclusive and slurm_cpus_per_task PASS.
# At the end, whatever happens, the cluster is restarted from its own configuration.
set -euo pipefail
root="$GPUACCEPT_RESULTS/cpu-binding-$$"
mkdir -p "$root"
fail() { echo "FAIL (cpu binding): $*" >&2; exit 1; }
restore() {
  "$GPUACCEPT_SOURCE/tests/cluster/down" >/dev/null 2>&1 || true
  env -u GPUACCEPT_CLUSTER_TASK_PLUGIN -u GPUACCEPT_CLUSTER_CPUS "$GPUACCEPT_SOURCE/tests/cluster/up" >/dev/null 2>&1 ||
    echo "cpu binding: the cluster did not come back up" >&2
  rm -rf "$root"
}
trap restore EXIT

# smoke_job [make variables...]: smoke on one node, 2 ranks, no GPUs; prints its results file.
smoke_job() {
  local out job
  out=$(make -s -C "$GPUACCEPT_SOURCE" -f Makefile.slurm smoke NODES=1 GPUS_PER_NODE=0 TASKS_PER_NODE=2 \
        RESULTS="$root" BUILD="$(dirname "$GPUACCEPT_BIN")" "$@")
  job=$(sed -n 's/^smoke job: \([0-9]*\);.*/\1/p' <<<"$out")
  [[ -n $job ]] || fail "no job id in: $out"
  for _ in $(seq 240); do squeue -h -j "$job" 2>/dev/null | grep -q . || break; sleep 0.5; done
  echo "$root/$job/smoke.h5"
}

# 1. No binding: both ranks may use every CPU.
h5=$(smoke_job)
"$RESULTS_CHECK" "$h5" --ranks 2 --record-status binding_cpu_exclusive=FAIL \
  --message-contains "binding_cpu_exclusive=ranks 0 and 1 share CPUs" \
  --message-contains "binding_cpu_exclusive=TaskPlugin=task/affinity" || fail "unbound ranks were not reported"

# 2. Bound: TaskPlugin=task/affinity on this machine's real CPUs, one CPU a rank.
(( $(nproc) >= 2 )) || { echo "cpu binding: ok (part 2 skipped: one CPU, nothing to bind apart)"; exit 0; }
"$GPUACCEPT_SOURCE/tests/cluster/down" >/dev/null 2>&1
eval "$(GPUACCEPT_CLUSTER_TASK_PLUGIN=task/affinity GPUACCEPT_CLUSTER_CPUS="$(nproc)" "$GPUACCEPT_SOURCE/tests/cluster/up")"
grep -q '^TaskPlugin=task/affinity' "$SLURM_CONF" || fail "slurm.conf has no TaskPlugin=task/affinity"
h5=$(smoke_job CPUS_PER_TASK=1)
"$RESULTS_CHECK" "$h5" --ranks 2 --record-status binding_cpu_exclusive=PASS \
  --message-contains "binding_cpu_exclusive=have disjoint CPU sets" \
  --record "slurm_cpus_per_task PASS expected=1" --no-status FAIL --no-status ERROR || fail "bound ranks did not pass"
echo "cpu binding: ok"
