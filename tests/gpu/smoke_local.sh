#!/usr/bin/env bash
# The smoke phase on this machine, one process, no Slurm: GPU health, GEMM sweep,
# memory/PCIe bandwidth and sustained load on GPU 0, then a summary table.
#
#   tests/gpu/smoke_local.sh                  # results under $OUT (or a temp dir)
#   SMOKE_ALL_GPUS=1 tests/gpu/smoke_local.sh  # let the process see every GPU: adds the peer matrix
#   SMOKE_CONFIG=my.yaml tests/gpu/smoke_local.sh   # e.g. smoke: {gemm_sizes: [8192], sustained_seconds: 30}
#
# Exit code: the phase's (0 all PASS/SKIP, 1 a FAIL or ERROR, 2 unusable input).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN=${BIN:-$ROOT/build/bin/gpuaccept-smoke}
OUT=${OUT:-$(mktemp -d /tmp/gpuaccept-smoke.XXXXXX)}
[[ -x $BIN ]] || { echo "no $BIN: build it first (cmake --build build --target gpuaccept-smoke)" >&2; exit 2; }
mkdir -p "$OUT"
[[ ${SMOKE_ALL_GPUS:-0} == 1 ]] || export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
# Not a Slurm task: a stray SLURM_PROCID would make the phase demand PMIx.
unset SLURM_PROCID PMIX_NAMESPACE

nvidia-smi --query-gpu=index,name,driver_version,temperature.gpu,power.draw,clocks.sm --format=csv 2>/dev/null || true
args=(--results "$OUT/results" --run-id smoke-local)
[[ -n ${SMOKE_CONFIG:-} ]] && args+=(--config "$SMOKE_CONFIG")
"$BIN" "${args[@]}" 2>&1 | tee "$OUT/smoke.log"
rc=${PIPESTATUS[0]}

echo
echo "=== summary (rc=$rc; results $OUT/results/smoke-local/; log $OUT/smoke.log) ==="
sed -n '/records of rank 0:/,/ on this rank$/p' "$OUT/smoke.log" | sed -e 's/^\[[^]]*\] //' -e '/^records of rank 0:$/d'
exit "$rc"
