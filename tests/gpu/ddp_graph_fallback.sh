#!/bin/bash
# ddp.cuda_graph's fallback, on one GPU. With the hidden flag --debug-graph-refusal every capture
# also synchronises its stream, which no capture allows: each pass must then run eagerly, the
# phase must say once why, and its verdict must not change. The same run without the flag
# captures its passes. With matmul_autotune off (fixed algorithms) both runs' printed losses and
# gradient norms must be equal bit for bit, and so must the checkpoint resume of each.
#   tests/gpu/ddp_graph_fallback.sh      (after: source tests/gpu/env.sh; logs under $OUT)
# Prints one line per expectation and "ddp_graph_fallback: ok" or "... FAILED"; exit status 1
# when any expectation failed.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
BIN=${GPUACCEPT_BIN:-$PWD/build/bin}
export NCCL_NVLS_ENABLE=0
cfg=$OUT/ddp-graph-fallback.yaml
printf 'ddp:\n  steps: 20\n  timing_skip: 5\n  matmul_autotune: false\n  gradient_check: false\n' >"$cfg"
failed=0
expect() {  # expect WHAT COMMAND...: prints the outcome, counts a failure
  local what=$1
  shift
  if "$@"; then echo "  ok: $what"; else echo "  FAILED: $what"; failed=1; fi
}
for side in refused captured; do
  flag=()
  [ "$side" = refused ] && flag=(--debug-graph-refusal)
  timeout --kill-after=10 300 "$BIN/gpuaccept-ddp" --config "$cfg" --results "$OUT/results" \
    --run-id "graph-$side" "${flag[@]}" >"$OUT/ddp-graph-$side.log" 2>&1
  echo "$side: exit $?; $(grep -o 'ddp: all: [0-9]* tokens/s per GPU' "$OUT/ddp-graph-$side.log" | head -n1)"
  grep -o 'step [0-9]*/20 all: loss [0-9.]*, grad norm [0-9.]*' "$OUT/ddp-graph-$side.log" >"$OUT/losses-$side.txt"
  expect "$side: verdict PASS" grep -q 'ddp verdict: PASS' "$OUT/ddp-graph-$side.log"
  expect "$side: checkpoint resume bit-equal" grep -q 'checkpoint resume PASS' "$OUT/ddp-graph-$side.log"
done
fallback=$(grep -c 'could not be captured as a CUDA graph' "$OUT/ddp-graph-refused.log")
expect "refused: the fallback logged once ($fallback)" test "$fallback" -eq 1
expect "refused: no pass captured" bash -c "! grep -q 'captured as CUDA graphs, replayed' '$OUT/ddp-graph-refused.log'"
expect "captured: the passes captured" grep -q 'captured as CUDA graphs, replayed' "$OUT/ddp-graph-captured.log"
expect "20 losses in each" test "$(wc -l <"$OUT/losses-refused.txt")" -eq 20 -a "$(wc -l <"$OUT/losses-captured.txt")" -eq 20
expect "losses and gradient norms bitwise equal" cmp -s "$OUT/losses-refused.txt" "$OUT/losses-captured.txt"
grep -h 'could not be captured' "$OUT/ddp-graph-refused.log" | head -n1
[ "$failed" = 0 ] && echo "ddp_graph_fallback: ok" || echo "ddp_graph_fallback: FAILED"
exit "$failed"
