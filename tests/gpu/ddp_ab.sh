#!/bin/bash
# Two builds of gpuaccept-ddp on one GPU, alternately, in one call: the GPU machines lent
# differ by several percent from call to call (docs/performance-history.md), which hides a change
# of a few percent unless both builds run on the same GPU:
#   tests/gpu/ddp_ab.sh BIN_A BIN_B [ROUNDS]     (after: source tests/gpu/env.sh)
# Each round runs A, then B (GPT-2 124M, micro-batch 16, seq 1024, STEPS [40] steps, the
# median of those after the first 10; no gradient check, equivalence or scaling runs) and
# prints both throughput lines; then each build's median over the rounds.
# A_YAML / B_YAML: lines added under `ddp:` for that side only, so one build can be compared
# with itself under two settings, e.g.
#   A_YAML='  matmul_autotune: false' tests/gpu/ddp_ab.sh .gpu-carry/bin/gpuaccept-ddp .gpu-carry/bin/gpuaccept-ddp 3
# (the keys are ddp's own: the phase refuses one it does not know)
set -uo pipefail
[ $# -ge 2 ] || { sed -n '2,8p' "$0"; exit 2; }
a=$1 b=$2 rounds=${3:-3}
OUT=${OUT:-$(mktemp -d -p /var/tmp)}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
for side in A B; do
  printf 'ddp:\n  steps: %d\n  timing_skip: 10\n  equivalence_steps: 0\n  scaling_steps: 0\n  gradient_check: false\n' \
    "${STEPS:-40}" >"$OUT/ddp-ab-$side.yaml"
  extra=A_YAML
  [ "$side" = B ] && extra=B_YAML
  [ -n "${!extra:-}" ] && printf '%s\n' "${!extra}" >>"$OUT/ddp-ab-$side.yaml"
done
declare -A seen
for r in $(seq 1 "$rounds"); do
  for side in A B; do
    bin=$a
    [ "$side" = B ] && bin=$b
    log=$OUT/ddp-ab-$side-$r.log
    timeout --kill-after=10 300 "$bin" --config "$OUT/ddp-ab-$side.yaml" --results "$OUT/results" --run-id "ab-$side-$r" >"$log" 2>&1
    line=$(grep -o 'ddp: all: [0-9]* tokens/s per GPU.*' "$log" | head -n1)
    echo "round $r $side ($bin): ${line:-no throughput line, see $log}"
    tps=$(sed -n 's/^ddp: all: \([0-9]*\) tokens.*/\1/p' <<<"$line")
    [ -n "$tps" ] && seen[$side]+="$tps "
  done
done
for side in A B; do
  med=$(tr ' ' '\n' <<<"${seen[$side]:-}" | grep . | sort -n | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]}')
  echo "median $side: ${med:-none} tokens/s per GPU"
done
