#!/bin/bash
# The fault tests on a machine with several GPUs, one rank per GPU under the local Slurm:
#   nccl-hang, nccl-kill   tests/gpu/nccl_kill.sh hang|kill (a rank stops or dies mid-sweep)
#   ddp-hang, ddp-kill     tests/gpu/train_kill.sh ddp hang|kill (a rank stops or dies mid-training)
#   fsdp-hang, fsdp-kill   tests/gpu/train_kill.sh fsdp-lora hang|kill (the same in fsdp-lora)
# Each must end within its bound, exit non-zero, name the rank and keep what was measured
# (the scripts check the results file). With one GPU use ranks_on_one_gpu.sh instead.
# On the GPU machine, after source tests/gpu/env.sh:
#   tests/gpu/faults.sh [step ...]      (default: all six; results under $OUT)
# Prints one "faults: STEP ok|FAILED" line per step; exit code: failed steps.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT/results"
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(nccl-hang nccl-kill ddp-hang ddp-kill fsdp-hang fsdp-kill)
source tests/gpu/local_slurm.sh >"$OUT/slurm.log" 2>&1 || { cat "$OUT/slurm.log"; exit 1; }
trap 'tests/cluster/down >/dev/null 2>&1' EXIT
[ "$ngpu" -ge 2 ] || { echo "faults: $ngpu GPU: use tests/gpu/ranks_on_one_gpu.sh" >&2; exit 1; }
export NRANKS=$ngpu GPUACCEPT_RESULTS=$OUT/results
# local_slurm.sh's binding: Slurm's --gpus-per-task where it schedules the GRES, else by local id.
[ "${bind[0]}" = --gpus-per-task=1 ] || export RANK_WRAPPER=$PWD/${bind[0]}

failed=0
for step in "${steps[@]}"; do
  echo "=== $step: $NRANKS ranks, one GPU each"
  case $step in
    nccl-hang) tests/gpu/nccl_kill.sh hang 2>&1 | tail -n 25 ;;
    nccl-kill) tests/gpu/nccl_kill.sh kill 2>&1 | tail -n 25 ;;
    ddp-hang) tests/gpu/train_kill.sh ddp hang 2>&1 | grep -v 'step [0-9]*/' | tail -n 25 ;;
    ddp-kill) tests/gpu/train_kill.sh ddp kill 2>&1 | grep -v 'step [0-9]*/' | tail -n 25 ;;
    fsdp-hang) tests/gpu/train_kill.sh fsdp-lora hang 2>&1 | grep -v 'step [0-9]*/' | tail -n 25 ;;
    fsdp-kill) tests/gpu/train_kill.sh fsdp-lora kill 2>&1 | grep -v 'step [0-9]*/' | tail -n 25 ;;
    *) echo "unknown step $step" >&2; false ;;
  esac
  # shellcheck disable=SC2181
  if [ "${PIPESTATUS[0]}" -eq 0 ]; then echo "faults: $step ok"; else echo "faults: $step FAILED"; failed=$((failed + 1)); fi
done
exit "$failed"
