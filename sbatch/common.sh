# shellcheck shell=bash
# Shared by every sbatch/*.sbatch script: where the binaries, config and results are,
# and how one phase is launched (one rank per GPU, PMIx, Slurm's GPU binding).
# Every setting can be overridden from the environment or `sbatch --export`.
set -uo pipefail

# sbatch runs a copy of the script from its spool, so locate the repo through the
# environment (Makefile.slurm exports GPUACCEPT_HOME) or the submit directory.
GPUACCEPT_HOME=${GPUACCEPT_HOME:-${SLURM_SUBMIT_DIR:-$PWD}}
GPUACCEPT_BIN=${GPUACCEPT_BIN:-$GPUACCEPT_HOME/build/bin}
GPUACCEPT_RESULTS=${GPUACCEPT_RESULTS:-$GPUACCEPT_HOME/results}
GPUACCEPT_PROFILE=${GPUACCEPT_PROFILE:-quick}
GPUACCEPT_CONFIG=${GPUACCEPT_CONFIG:-$GPUACCEPT_HOME/configs/$GPUACCEPT_PROFILE.yaml}
# GPUs per node to drive, one rank each; 0 on a cluster without GPUs (the local test
# cluster), where GPUACCEPT_TASKS_PER_NODE ranks run and GPU checks SKIP.
GPUACCEPT_GPUS_PER_NODE=${GPUACCEPT_GPUS_PER_NODE:-${SLURM_GPUS_ON_NODE:-0}}
GPUACCEPT_TASKS_PER_NODE=${GPUACCEPT_TASKS_PER_NODE:-$((GPUACCEPT_GPUS_PER_NODE > 0 ? GPUACCEPT_GPUS_PER_NODE : 1))}
GPUACCEPT_CPUS_PER_TASK=${GPUACCEPT_CPUS_PER_TASK:-}
# Seconds srun waits, once the first rank of a step has ended, before it ends the ranks still
# running (srun --wait). A rank that hangs (stopped, stuck in a driver call) would otherwise
# hold the step, and the job, until the job's time limit after every other rank gave up on it
# in a fence (GPUACCEPT_PMIX_TIMEOUT, default 600 s) and rank 0 wrote the phase file. Healthy
# ranks end within seconds of each other (they leave the last fence together); a rank still at
# work when another gave up waits at most two fences. Default: two fence timeouts and a minute.
GPUACCEPT_STEP_WAIT=${GPUACCEPT_STEP_WAIT:-$(( 2 * ${GPUACCEPT_PMIX_TIMEOUT:-600} + 60 ))}
export GPUACCEPT_HOME GPUACCEPT_RESULTS GPUACCEPT_CONFIG GPUACCEPT_PROFILE
# NVLink SHARP (multicast) stays off unless an operator turns it on deliberately.
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}

# scancel, a job's time limit or a preemption sends SIGTERM to the batch script and the step
# alike, and SIGKILL KillWait seconds later (30 by default). Without a trap bash would die at
# once and nobody would assemble the phase file from what the ranks had checkpointed; with it,
# bash waits for srun (whose ranks end on the same SIGTERM), then salvages within KillWait.
GPUACCEPT_SIGNALLED=""
trap 'GPUACCEPT_SIGNALLED="SIGTERM (the job was cancelled, reached its time limit or was preempted)"' TERM

# run_phase PHASE [extra args...]: one srun step, one rank per GPU on every node.
run_phase() {
  local phase=$1
  shift
  local binary="$GPUACCEPT_BIN/gpuaccept-$phase"
  local -a step=(srun --mpi=pmix --kill-on-bad-exit=0 --wait="$GPUACCEPT_STEP_WAIT"
                 --ntasks-per-node="$GPUACCEPT_TASKS_PER_NODE")
  if [ "$GPUACCEPT_GPUS_PER_NODE" -gt 0 ]; then
    step+=(--gpus-per-task=1)  # Slurm binds each task to its own GPU (CUDA_VISIBLE_DEVICES)
  fi
  if [ -n "$GPUACCEPT_CPUS_PER_TASK" ]; then
    step+=(--cpus-per-task="$GPUACCEPT_CPUS_PER_TASK")
  fi
  echo "gpuaccept: phase $phase ($binary) on ${SLURM_JOB_NUM_NODES:-1} nodes (${SLURM_JOB_NODELIST:-local}), $GPUACCEPT_TASKS_PER_NODE ranks per node, results in $GPUACCEPT_RESULTS, config $GPUACCEPT_CONFIG, started $(date -u +%FT%TZ)"
  if [ ! -x "$binary" ]; then
    echo "gpuaccept: $binary is missing: build first (cmake -S . -B build && cmake --build build)" >&2
    return 2
  fi
  "${step[@]}" "$binary" --results "$GPUACCEPT_RESULTS" --config "$GPUACCEPT_CONFIG" "$@"
  local rc=$?
  echo "gpuaccept: phase $phase ended with exit code $rc at $(date -u +%FT%TZ)${GPUACCEPT_SIGNALLED:+ after $GPUACCEPT_SIGNALLED}"
  # A rank killed by a signal takes every rank down: Slurm's mpi/pmix plugin kills the whole
  # step when PMIx reports a lost client (its _errhandler calls slurm_kill_job_step), whatever
  # --kill-on-bad-exit says. Nobody wrote the phase file then: assemble it from the ranks'
  # checkpoints, with the failure recorded.
  if [ "$rc" -ne 0 ] && [ -x "$GPUACCEPT_BIN/gpuaccept-salvage" ]; then
    "$GPUACCEPT_BIN/gpuaccept-salvage" --phase "$phase" --results "$GPUACCEPT_RESULTS" \
      --ranks $(( ${SLURM_JOB_NUM_NODES:-1} * GPUACCEPT_TASKS_PER_NODE )) \
      --why "srun exited with code $rc on ${SLURM_JOB_NODELIST:-this node}${GPUACCEPT_SIGNALLED:+ after $GPUACCEPT_SIGNALLED}"
  fi
  return $rc
}
