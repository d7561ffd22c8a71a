# shellcheck shell=bash
# Shared by tests/gpu/nccl_*.sh: where things are, and how N ranks start on this GPU
# machine without a cluster. Sourced, not run.
#
# The launcher is Slurm's srun with PMIx (the World that gpuaccept's phases need), from the
# local Slurm of tests/cluster/up. On a GPU machine, once (as root):
#   GPUACCEPT_CLUSTER_NODES=1 GPUACCEPT_CLUSTER_GRES=gpu:8 \
#   GPUACCEPT_CLUSTER_GRES_CONF_LINES="Name=gpu File=/dev/nvidia[0-7]" \
#   [GPUACCEPT_SLURM_PREFIX=/where/the/slurm/debs/were/unpacked] \
#     tests/cluster/up > /var/tmp/gpuaccept-cluster.env
#   source /var/tmp/gpuaccept-cluster.env    # SLURM_CONF, PATH, GPUACCEPT_RESULTS
# Inside a real Slurm allocation (salloc -N1 --gpus=8) nothing needs starting.
#
# Knobs: GPUACCEPT_BIN [build/bin], GPUACCEPT_RESULTS (must be visible from the Slurm
# node: the local cluster's nodes have a private /tmp) [/var/tmp/gpuaccept-nccl],
# NRANKS [every GPU nvidia-smi lists], SRUN_EXTRA (more srun flags).
set -euo pipefail

GPU_TESTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$GPU_TESTS/../.." && pwd)
BIN=${GPUACCEPT_BIN:-$REPO/build/bin}
RESULTS=${GPUACCEPT_RESULTS:-/var/tmp/gpuaccept-nccl}
if [ -n "${GPUACCEPT_SLURM_PREFIX:-}" ]; then
  PATH=$GPUACCEPT_SLURM_PREFIX/usr/bin:$PATH
fi
NRANKS=${NRANKS:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)}
RESULTS_CHECK=${RESULTS_CHECK:-$BIN/results-check}

die() {
  echo "FAIL: $*" >&2
  exit 1
}

need() {
  command -v srun >/dev/null || die "no srun: start the local cluster (see tests/gpu/nccl_common.sh) or use salloc"
  [ -x "$BIN/gpuaccept-nccl-scaling" ] || die "$BIN/gpuaccept-nccl-scaling missing: build first"
  [ "${NRANKS:-0}" -ge 2 ] || die "need 2 or more GPUs (NRANKS=${NRANKS:-0})"
  mkdir -p "$RESULTS"
}

# LAUNCH: the srun line for N ranks on this node, one GPU each (Slurm sets
# CUDA_VISIBLE_DEVICES). --kill-on-bad-exit=0 as in sbatch/common.sh: a dead rank must
# not take the step down, the phase itself has to cope.
launch_argv() {
  # shellcheck disable=SC2206
  LAUNCH=(srun -N1 -n "$1" --gpus-per-task=1 --mpi=pmix --kill-on-bad-exit=0 ${SRUN_EXTRA:-})
}
launch() {
  launch_argv "$1"
  shift
  "${LAUNCH[@]}" "$@"
}
