#!/bin/bash
# Where the ddp step's GPU time goes, kernel by kernel, beside the compiled PyTorch anchor's,
# on one GPU (after: source tests/gpu/env.sh on the GPU machine):
#   tests/gpu/ddp_profile.sh            -> $OUT/profile-ddp.txt, $OUT/profile-torch-compile.txt
# Both programs run with the CUPTI library of probes/kernel_profile.cpp injected
# (CUDA_INJECTION64_PATH); each table counts only the last WINDOW_S seconds of GPU work, the
# steady training steps. SKIP_TORCH=1 profiles the phase only.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
BIN=${GPUACCEPT_BIN:-$root/build/bin}
lib=$BIN/libgpuaccept_kernel_profile.so
[ -f "$lib" ] || { echo "no $lib (built where CMake finds CUPTI)"; exit 1; }
# The machine may lack CUPTI; tests/gpu/prepare carries the build machine's.
[ -d "$root/.gpu-carry/lib" ] && export LD_LIBRARY_PATH=$root/.gpu-carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL_NVLS_ENABLE=0
window=${WINDOW_S:-1.5}

cfg=$OUT/ddp-profile.yaml
cat >"$cfg" <<YAML
ddp:
  model: gpt2_124m
  micro_batch: 16
  seq_len: 1024
  steps: ${STEPS:-120}
  timing_skip: 10
  gradient_check: false
  equivalence_steps: 0
YAML

echo "=== gpuaccept-ddp, kernels of the last $window s"
CUDA_INJECTION64_PATH=$lib KERNEL_PROFILE_WINDOW_S=$window KERNEL_PROFILE_OUT=$OUT/profile-ddp.txt \
  timeout --kill-after=10 300 "$BIN/gpuaccept-ddp" --config "$cfg" --results "$OUT/results" --run-id ddp-profile \
  >"$OUT/ddp-profile.log" 2>&1
echo "exit code $?"
grep -E "tokens/s|step split" "$OUT/ddp-profile.log" | tail -n 4
head -n 40 "$OUT/profile-ddp.txt"

[ -n "${SKIP_TORCH:-}" ] && exit 0
anchor=$root/.gpu-carry/anchors/torch_ddp_gpt2.py
[ -f "$anchor" ] || anchor=$root/../shared/anchors/torch_ddp_gpt2.py
echo "=== PyTorch anchor (compile), kernels of the last $window s"
CUDA_INJECTION64_PATH=$lib KERNEL_PROFILE_WINDOW_S=$window KERNEL_PROFILE_OUT=$OUT/profile-torch-compile.txt \
  torchrun --standalone --nproc_per_node=1 "$anchor" --seq 1024 --mbs 16 --steps 80 --compile \
  >"$OUT/torch-compile.log" 2>&1
echo "exit code $?"
grep RESULT "$OUT/torch-compile.log" || tail -n 20 "$OUT/torch-compile.log"
head -n 40 "$OUT/profile-torch-compile.txt"
