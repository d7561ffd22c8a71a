#!/bin/bash
# Power and clocks of every GPU during the fsdp-lora phase's runs: is the all-GPU run's slower
# backward (docs/performance-history.md: 27-32 ms a step on four H100s, the forward as fast as alone)
# the GPUs' power cap? nvidia-smi samples every GPU every 100 ms while the phase runs on all of
# them through the local Slurm; the phase's log lines are time-stamped as they arrive; then
# fsdp_power_summary.py gives, per run (all, single_gpu) over its timed steps, each GPU's mean
# power and SM clock and the share of samples with the power cap or a slowdown active.
#   OUT=... tests/gpu/fsdp_power.sh [NGPU]    (after tests/gpu/prepare; default: every GPU)
# FSDP_LAYERS (28), FSDP_STEPS (20) and FSDP_PHASE_ARGS (--no-recompute) as fsdp_lora_vs_torch.sh.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
# Not under /tmp: every node of the local Slurm mounts its own private /tmp.
OUT=${OUT:-$root/gpu-out/power}
mkdir -p "$OUT"
ngpu=${1:-$(nvidia-smi -L | grep -c '^GPU')}
export NCCL_NVLS_ENABLE=0

# clocks_event_reasons: the drivers' name since 535; clocks_throttle_reasons before.
start_sampling() {
  local fields=timestamp,index,power.draw,power.limit,clocks.sm,temperature.gpu
  fields+=,clocks_$1_reasons.sw_power_cap,clocks_$1_reasons.hw_slowdown,clocks_$1_reasons.sw_thermal_slowdown
  nvidia-smi --query-gpu="$fields" --format=csv,noheader,nounits -lms 100 >"$OUT/smi.csv" 2>"$OUT/smi.err" &
  smi=$!
  sleep 1
  kill -0 "$smi" 2>/dev/null
}
if ! start_sampling event && ! start_sampling throttle; then
  echo "nvidia-smi sampling did not start: $(head -c 300 "$OUT/smi.err")"
  exit 1
fi

# Each line of the phase's log with the time it arrived (seconds since the epoch).
FSDP_SLURM=$ngpu OUT="$OUT/phase" \
  FSDP_ARGS="--layers ${FSDP_LAYERS:-28} --steps ${FSDP_STEPS:-20} ${FSDP_PHASE_ARGS:---no-recompute}" \
  tests/gpu/fsdp_lora_local.sh 2>&1 | while IFS= read -r line; do printf '%s %s\n' "$(date +%s.%N)" "$line"; done \
  >"$OUT/phase.log"
echo "phase exit code ${PIPESTATUS[0]}"
kill "$smi"
wait "$smi" 2>/dev/null
grep -E "fsdp-lora: (all|single_gpu|node): " "$OUT/phase.log" | cut -d' ' -f2- | sed 's/^\[[^]]*\] //'
python3 tests/gpu/fsdp_power_summary.py "$OUT/smi.csv" "$OUT/phase.log"
