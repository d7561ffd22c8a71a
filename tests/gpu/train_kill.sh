#!/bin/bash
# A training rank dies (SIGKILL) or hangs in the middle of the all-GPU run: the ddp phase must
# end on its own within its step timeout plus the bounded final gather, exit non-zero, and
# record a `training` FAIL with the steps completed and the rank that did not arrive, keeping
# what was measured before (the gradient check, each rank's losses so far).
# Under srun --mpi=pmix a rank killed by a signal takes the whole step down (Slurm's
# mpi/pmix plugin; see sbatch/common.sh): the file is then salvaged from the ranks'
# checkpoints as sbatch/common.sh does, and must hold the gradient check and an ERROR saying
# how the step ended.
# Setup: tests/gpu/nccl_common.sh.   tests/gpu/ddp_kill.sh [kill|hang]
#   KILL_RANK [1] (not 0: rank 0 writes the results file), KILL_AFTER steps [5],
#   TIMEOUT seconds (ddp.step_timeout_s) [30], MICRO_BATCH [4].
# shellcheck source=tests/gpu/nccl_common.sh
source "$(dirname "$0")/nccl_common.sh"
need
fault_setup ddp "${1:-kill}" 5
config=$RESULTS/$run.yaml
printf 'ddp:\n  steps: %d\n  step_timeout_s: %d\n  equivalence_steps: 0\n  scaling_steps: 0\n' \
  $((after + 20)) "$timeout_s" >"$config"
# Bound: start-up, gradient check and the steps before the fault (< 90 s), the step timeout,
# the hung rank's last resort after the abort notice (~5 s), the final gather (60 s), slack.
run_with_fault $((90 + timeout_s + 5 + 60 + 30)) "$BIN/gpuaccept-ddp" --config "$config" --results "$RESULTS" \
  --run-id "$run" --micro-batch "${MICRO_BATCH:-4}"
file=$RESULTS/$run/ddp.h5
expect_salvaged ddp "$file" gradient_check
[ -f "$file" ] || die "no results file $file: rank 0 did not write it"
state=$([ "$mode" = kill ] && echo "dead?" || echo "alive, stuck at step $after of run 'all'")
"$RESULTS_CHECK" "$file" --phase ddp --ranks "$NRANKS" \
  --record-status gradient_check=PASS \
  --record-status training=FAIL \
  --record-status loss_curve=PASS \
  --message-contains "training=run 'all' had completed $after steps" \
  --message-contains "training=ranks that did not arrive: $rank (" \
  --message-contains "training=$state" || die "results check"
grep -q "ranks that did not arrive: $rank (" "$log" || die "the log does not name rank $rank"
echo "ddp $mode test: ok ($elapsed s)"
