#!/bin/bash
# The fsdp-lora phase's GPU checks, on the lent GPU machine (prepare here first with
# tests/gpu/prepare; carry .gpu-carry):
#   tests/gpu/fsdp_tests.sh
# fsdp-kernel-tests: RMSNorm, RoPE, SwiGLU, LoRA dropout against a float64 CPU loop.
# fsdp-model-tests:  the Qwen2 + LoRA model on one GPU (loss and every LoRA gradient)
#                    against the float64 CPU reference (src: phases/fsdp-lora/cpu_reference).
# flash-attention-tests: src/train's attention (both phases') at heads of 64 and 128, every
#                    variant, both layouts, against a float64 loop, and its timing lines.
# Each program's last line says PASS or FAIL; logs go to $OUT (or ./gpu-out).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
source tests/gpu/env.sh
rc=0
for t in fsdp-kernel-tests fsdp-model-tests flash-attention-tests; do
  echo "=== $t"
  "$GPUACCEPT_BIN/$t" >"$OUT/$t.log" 2>&1 || rc=1
  grep -E 'FAIL' "$OUT/$t.log" | head -n 40
  # The attention's timing lines (forward and backward variants side by side): not checks.
  grep -E 'attention_timing|info timing' "$OUT/$t.log" | cut -c1-300
  tail -n 1 "$OUT/$t.log"
done
exit $rc
