#!/bin/bash
# The fsdp-lora phase against the PyTorch anchor (../shared/anchors/torch_fsdp_lora_qwen2_7b.py,
# carried as .gpu-carry/anchors/: FSDP2 fully_shard per layer + PEFT LoRA) on the same GPUs
# and the same shape, in one call, for docs/performance.md:
#   tests/gpu/fsdp_lora_vs_torch.sh [NGPU]        (after: source tests/gpu/env.sh on the GPU machine)
# Shape: Qwen2-7B's width with FSDP_LAYERS layers (default 4: one GPU holds it whole, the
# anchor's step time per layer is what scales), sequence 4096, micro-batch 2, LoRA r=64 on
# q/k/v/o, activation recompute on both sides. TORCH_MODES="ckpt no-ckpt" also runs the
# anchor without recompute, FSDP_PHASE_ARGS=--no-recompute the phase without it (any other
# gpuaccept-fsdp-lora flags likewise); SKIP_TORCH=1 leaves PyTorch out.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
OUT=${OUT:-$(mktemp -d -p /var/tmp)}
mkdir -p "$OUT"
ngpu=${1:-1}
layers=${FSDP_LAYERS:-4}
steps=${FSDP_STEPS:-12}
export NCCL_NVLS_ENABLE=0
cd "$root" || exit 1

echo "=== gpuaccept-fsdp-lora on $ngpu GPU(s), $layers layers ${FSDP_PHASE_ARGS:-}"
args="--layers $layers --steps $steps ${FSDP_PHASE_ARGS:-}"
if [ "$ngpu" -gt 1 ]; then
  FSDP_SLURM=$ngpu FSDP_ARGS="$args" OUT="$OUT/phase" tests/gpu/fsdp_lora_local.sh >"$OUT/fsdp-lora.out" 2>&1
else
  FSDP_ARGS="$args" OUT="$OUT/phase" timeout --kill-after=10 "${FSDP_TIMEOUT:-400}" tests/gpu/fsdp_lora_local.sh \
    >"$OUT/fsdp-lora.out" 2>&1
fi
echo "exit code $?"
grep -v '^\[.* r[1-9][0-9]*/' "$OUT/fsdp-lora.out" | tail -n 70

anchor=$root/.gpu-carry/anchors/torch_fsdp_lora_qwen2_7b.py
[ -f "$anchor" ] || anchor=$root/../shared/anchors/torch_fsdp_lora_qwen2_7b.py
[ -n "${SKIP_TORCH:-}" ] && exit 0
for mode in ${TORCH_MODES:-ckpt}; do
  echo "=== PyTorch anchor ($mode) on $ngpu GPU(s), $layers layers"
  flag=()
  [ "$mode" = no-ckpt ] && flag=(--no-ckpt)
  timeout --kill-after=10 300 torchrun --standalone --nproc_per_node="$ngpu" "$anchor" --layers "$layers" --seq 4096 \
    --mbs 2 --steps "$steps" "${flag[@]}" >"$OUT/torch-$mode.log" 2>&1
  grep RESULT "$OUT/torch-$mode.log" || tail -n 20 "$OUT/torch-$mode.log"
done
