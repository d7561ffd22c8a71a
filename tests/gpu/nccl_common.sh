# shellcheck shell=bash
# Shared by tests/gpu/nccl_*.sh and train_kill.sh: where things are, how N ranks start on
# this GPU machine's local Slurm, and the fault tests' common part. Sourced, not run.
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
# NRANKS [every GPU nvidia-smi lists], SRUN_EXTRA (more srun flags), RANK_WRAPPER (a command
# each rank runs its binary through, e.g. tests/gpu/bind_local_gpu.sh where Slurm has no GPU
# GRES, or tests/gpu/own_host_per_rank.sh; unset: --gpus-per-task=1).
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
# CUDA_VISIBLE_DEVICES, or RANK_WRAPPER does). --kill-on-bad-exit=0 as in sbatch/common.sh:
# a rank that exits with an error must not take the step down, the phase itself has to cope.
launch_argv() {
  # shellcheck disable=SC2206
  if [ -n "${RANK_WRAPPER:-}" ]; then
    LAUNCH=(srun -N1 -n "$1" --mpi=pmix --kill-on-bad-exit=0 ${SRUN_EXTRA:-} $RANK_WRAPPER)
  else
    LAUNCH=(srun -N1 -n "$1" --gpus-per-task=1 --mpi=pmix --kill-on-bad-exit=0 ${SRUN_EXTRA:-})
  fi
}
launch() {
  launch_argv "$1"
  shift
  "${LAUNCH[@]}" "$@"
}

# After a step that ended with exit code $4 and left no results file: what sbatch/common.sh
# does, the phase file assembled from the ranks' checkpoints (gpuaccept-salvage). Slurm's
# mpi/pmix plugin kills the whole step when a rank dies by a signal (see sbatch/common.sh),
# so a SIGKILLed rank leaves no survivor to write the file.   salvage PHASE RUN_ID RANKS RC
salvage() {
  [ ! -f "$RESULTS/$2/$1.h5" ] || return 0
  echo "no $1.h5 after exit code $4: Slurm ended the whole step; salvaging the ranks' checkpoints"
  # Exit code 1: salvaged (the step had failed); 2: could not.
  local rc=0
  "$BIN/gpuaccept-salvage" --phase "$1" --results "$RESULTS" --run-id "$2" --ranks "$3" \
    --why "srun exited with code $4" || rc=$?
  [ "$rc" -le 1 ] || die "gpuaccept-salvage failed (exit code $rc)"
}

# The fault tests (nccl_kill.sh, train_kill.sh). fault_setup PHASE MODE DEFAULT_AFTER: reads
# KILL_RANK [1], KILL_AFTER [DEFAULT_AFTER], TIMEOUT [30] and sets mode, rank, after,
# timeout_s, inject (the phase's hidden fault flags), run and log.
fault_setup() {
  mode=${2:-kill}
  rank=${KILL_RANK:-1}
  after=${KILL_AFTER:-$3}
  # shellcheck disable=SC2034  # the callers' phase flags use it
  timeout_s=${TIMEOUT:-30}
  [ "$rank" -ne 0 ] || die "KILL_RANK=0: rank 0 writes the results file; pick another"
  [ "$rank" -lt "$NRANKS" ] || die "KILL_RANK=$rank but $NRANKS ranks"
  case $mode in
    kill) inject=(--debug-kill-rank "$rank" --debug-kill-after-steps "$after") ;;
    hang) inject=(--debug-hang-rank "$rank" --debug-kill-after-steps "$after") ;;
    *) die "mode $mode: want kill or hang" ;;
  esac
  run=$1-$mode-$(date +%Y%m%dT%H%M%S)
  log=$RESULTS/$run.log
}

# run_with_fault LIMIT BINARY [ARGS...]: NRANKS ranks of BINARY with the fault injected;
# sets rc and elapsed; dies unless the step failed within LIMIT seconds (timeout(1) ends a
# hung step 60 s later).
run_with_fault() {
  local limit=$1 start
  shift
  start=$(date +%s)
  launch_argv "$NRANKS"
  set +e
  timeout --kill-after=10 $((limit + 60)) "${LAUNCH[@]}" "$@" "${inject[@]}" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  set -e
  elapsed=$(($(date +%s) - start))
  echo "exit code $rc after $elapsed s (limit $limit s)"
  [ "$rc" -ne 0 ] || die "exit code 0 although rank $rank was ${mode}ed"
  [ "$elapsed" -le "$limit" ] || die "took $elapsed s, more than $limit s (timeout(1) ends it at $((limit + 60)) s)"
}

# After run_with_fault: where the killed rank took the srun step down (Slurm's mpi/pmix
# plugin does, see sbatch/common.sh) and no rank wrote FILE, salvage it as sbatch/common.sh
# does, require the test KEPT (measured before the kill) and an ERROR saying how the step
# ended, and exit 0. Returns when the survivors wrote FILE themselves.
#   expect_salvaged PHASE FILE KEPT
expect_salvaged() {
  [ "$mode" = kill ] && [ ! -f "$2" ] || return 0
  salvage "$1" "$run" "$NRANKS" "$rc"
  [ -f "$2" ] || die "no results file $2, even salvaged"
  "$RESULTS_CHECK" "$2" --phase "$1" --complete partial --record-status "$3=PASS" \
    --record-status result_gather=ERROR --message-contains "result_gather=srun exited with code $rc" ||
    die "results check (salvaged)"
  echo "$1 kill test: ok, Slurm ended the step; file salvaged with what was measured before ($elapsed s)"
  exit 0
}
