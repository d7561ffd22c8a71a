#!/bin/bash
# Nsight Compute on the flash attention kernels at Qwen2-7B's shape (B 2, T 4096, 28/4 heads of
# 128), inside gpuaccept-fsdp-lora on one GPU (2 layers, no recompute, 3 steps): the first
# launches of the forward (one a layer), then the dK/dV and the dQ kernels, with the sections that say where a
# kernel's time goes (throughput against the GPU's peaks, warp stall reasons, occupancy).
#   tests/gpu/attention_ncu.sh      -> $OUT/attention-ncu.txt   (after tests/gpu/prepare here)
# SKIPs, saying why, where ncu is missing or the GPU's performance counters are not allowed.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
source tests/gpu/env.sh
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
if [ -z "$ncu" ]; then
  echo "attention_ncu: SKIP (no ncu on this machine)"
  exit 0
fi
cfg=$OUT/attention-ncu.yaml
cat >"$cfg" <<YAML
fsdp_lora:
  model: qwen2_7b
  layers: 2
  seq_len: 4096
  micro_batch: 2
  steps: 3
  timing_skip: 1
  gradient_check: false
  recompute: false
YAML
(unset SLURM_PROCID PMIX_NAMESPACE
 CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0} timeout --kill-after=10 "${NCU_TIMEOUT:-240}" "$ncu" \
   -k 'regex:flash_forward128|dkdv|dq_from_ds' -c 4 \
   --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
   --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats \
   "$GPUACCEPT_BIN/gpuaccept-fsdp-lora" --config "$cfg" --results "$PWD/gpu-out/ncu-results" --run-id ncu \
   >"$OUT/attention-ncu.txt" 2>&1)
rc=$?
echo "ncu exit code $rc ($ncu)"
if grep -q 'ERR_NVGPUCTRPERM' "$OUT/attention-ncu.txt"; then
  echo "attention_ncu: SKIP (the GPU's performance counters are not allowed to this user)"
  exit 0
fi
grep -E '^  [a-z_:]*(flash|dkdv|dq_from)|Duration|Compute \(SM\) Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Stall|One or More Eligible|L1/TEX Hit|Executed Ipc Active|SM Busy' \
  "$OUT/attention-ncu.txt" | cut -c1-160 | head -n 90
