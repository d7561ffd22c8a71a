#!/bin/bash
# A training rank dies (SIGKILL) or hangs in the middle of the all-GPU run of ddp or fsdp-lora:
# the phase must end on its own within its step timeout plus the bounded final gather, exit
# non-zero, and record a `training` FAIL with the steps completed and the rank that did not
# arrive, keeping what was measured before (the gradient check, each rank's losses so far).
# Under srun --mpi=pmix a rank killed by a signal takes the whole step down (Slurm's
# mpi/pmix plugin; see sbatch/common.sh): the file is then salvaged from the ranks'
# checkpoints as sbatch/common.sh does, and must hold the gradient check and an ERROR saying
# how the step ended.
# Setup: tests/gpu/nccl_common.sh.   tests/gpu/train_kill.sh ddp|fsdp-lora [kill|hang]
#   KILL_RANK [1] (not 0: rank 0 writes the results file), KILL_AFTER steps [5],
#   TIMEOUT seconds (<phase>.step_timeout_s) [30], MICRO_BATCH [4 for ddp, 1 for fsdp-lora],
#   DDP_KEYS (more ddp keys, comma-separated key=value as ranks_on_one_gpu.sh and
#   ddp_profile.sh take them, e.g. all_reduce=copy_engine), FSDP_KEYS (more fsdp-lora settings,
#   one "key: value" a line, e.g. "gather: nccl").
# fsdp-lora runs Qwen2-7B's shape cut to 2 layers at sequence 1024, so that several ranks fit
# on one GPU beside each other.
# shellcheck source=tests/gpu/nccl_common.sh
source "$(dirname "$0")/nccl_common.sh"
need
phase=${1:?ddp or fsdp-lora}
fault_setup "$phase" "${2:-kill}" 5
config=$RESULTS/$run.yaml
case $phase in
  ddp)
    printf 'ddp:\n  steps: %d\n  step_timeout_s: %d\n  equivalence_steps: 0\n  scaling_steps: 0\n' \
      $((after + 20)) "$timeout_s" >"$config"
    IFS=, read -ra kv <<<"${DDP_KEYS:-}"
    for k in "${kv[@]}"; do printf '  %s: %s\n' "${k%%=*}" "${k#*=}" >>"$config"; done
    shape=(--micro-batch "${MICRO_BATCH:-4}") ;;
  fsdp-lora)
    printf 'fsdp_lora:\n  model: qwen2_7b\n  layers: 2\n  seq_len: 1024\n  steps: %d\n  step_timeout_s: %d\n  equivalence_steps: 0\n  scaling_steps: 0\n' \
      $((after + 20)) "$timeout_s" >"$config"
    [[ -n ${FSDP_KEYS:-} ]] && sed 's/^/  /' <<<"$FSDP_KEYS" >>"$config"
    shape=(--micro-batch "${MICRO_BATCH:-1}") ;;
  *) die "phase $phase: want ddp or fsdp-lora" ;;
esac
# Bound: start-up, gradient check and the steps before the fault (< 90 s), the step timeout,
# the hung rank's last resort after the abort notice (~5 s), the final gather (60 s), slack.
run_with_fault $((90 + timeout_s + 5 + 60 + 30)) "$BIN/gpuaccept-$phase" --config "$config" --results "$RESULTS" \
  --run-id "$run" "${shape[@]}"
file=$RESULTS/$run/$phase.h5
expect_salvaged "$phase" "$file" gradient_check
[ -f "$file" ] || die "no results file $file: rank 0 did not write it"
state=$([ "$mode" = kill ] && echo "dead?" || echo "alive, stuck at step $after of run 'all'")
"$RESULTS_CHECK" "$file" --phase "$phase" --ranks "$NRANKS" \
  --record-status gradient_check=PASS \
  --record-status training=FAIL \
  --record-status loss_curve=PASS \
  --message-contains "training=run 'all' had completed $after steps" \
  --message-contains "training=ranks that did not arrive: $rank (" \
  --message-contains "training=$state" || die "results check"
grep -q "ranks that did not arrive: $rank (" "$log" || die "the log does not name rank $rank"
echo "$phase $mode test: ok ($elapsed s)"
