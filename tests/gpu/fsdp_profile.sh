#!/bin/bash
# Where the fsdp-lora step's GPU time goes, kernel by kernel, beside the FSDP2 + PEFT anchor's,
# on one GPU (after: source tests/gpu/env.sh on the GPU machine):
#   tests/gpu/fsdp_profile.sh     -> $OUT/profile-fsdp.txt, $OUT/profile-torch-fsdp.txt
# Both run Qwen2-7B's shape (FSDP_LAYERS, default 28), sequence 4096, micro-batch 2, recompute,
# with the CUPTI library of probes/kernel_profile.cpp injected (CUDA_INJECTION64_PATH); each
# table counts only the last WINDOW_S seconds of GPU work, the steady training steps.
# SKIP_TORCH=1 profiles the phase only. RECOMPUTE=false profiles both without activation
# recompute (the anchor's --no-ckpt, which needs more than one H100's memory: an H200).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
BIN=${GPUACCEPT_BIN:-$root/build/bin}
lib=$BIN/libgpuaccept_kernel_profile.so
[ -f "$lib" ] || { echo "no $lib (built where CMake finds CUPTI)"; exit 1; }
[ -d "$root/.gpu-carry/lib" ] && export LD_LIBRARY_PATH=$root/.gpu-carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL_NVLS_ENABLE=0
window=${WINDOW_S:-3}
layers=${FSDP_LAYERS:-28}

cfg=$OUT/fsdp-profile.yaml
cat >"$cfg" <<YAML
fsdp_lora:
  model: qwen2_7b
  layers: $layers
  seq_len: 4096
  micro_batch: 2
  steps: ${STEPS:-14}
  timing_skip: 3
  gradient_check: false
  recompute: ${RECOMPUTE:-true}
  # As tests/gpu/fsdp-gpu.yaml: the learning check passes within these few steps.
  lr: 1.0e-3
  lr_warmup: 2
YAML

echo "=== gpuaccept-fsdp-lora ($layers layers), kernels of the last $window s"
(unset SLURM_PROCID PMIX_NAMESPACE
 CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0} CUDA_INJECTION64_PATH=$lib KERNEL_PROFILE_WINDOW_S=$window \
   KERNEL_PROFILE_OUT=$OUT/profile-fsdp.txt timeout --kill-after=10 300 "$BIN/gpuaccept-fsdp-lora" --config "$cfg" \
   --results "$OUT/results" --run-id fsdp-profile >"$OUT/fsdp-profile.log" 2>&1)
echo "exit code $?"
grep -E "step [0-9]+/" "$OUT/fsdp-profile.log" | tail -n 2
head -n 45 "$OUT/profile-fsdp.txt"

[ -n "${SKIP_TORCH:-}" ] && exit 0
anchor=$root/.gpu-carry/anchors/torch_fsdp_lora_qwen2_7b.py
[ -f "$anchor" ] || anchor=$root/../shared/anchors/torch_fsdp_lora_qwen2_7b.py
torch_args=()
[ "${RECOMPUTE:-true}" = false ] && torch_args=(--no-ckpt)
echo "=== PyTorch anchor (FSDP2 + PEFT, recompute ${RECOMPUTE:-true}), kernels of the last $window s"
CUDA_INJECTION64_PATH=$lib KERNEL_PROFILE_WINDOW_S=$window KERNEL_PROFILE_OUT=$OUT/profile-torch-fsdp.txt \
  timeout --kill-after=10 300 torchrun --standalone --nproc_per_node=1 "$anchor" --layers "$layers" --seq 4096 --mbs 2 \
  --steps 14 "${torch_args[@]}" >"$OUT/torch-fsdp.log" 2>&1
echo "exit code $?"
grep RESULT "$OUT/torch-fsdp.log" || tail -n 20 "$OUT/torch-fsdp.log"
head -n 45 "$OUT/profile-torch-fsdp.txt"
