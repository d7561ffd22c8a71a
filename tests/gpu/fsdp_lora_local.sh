#!/usr/bin/env bash
# The fsdp-lora phase on this machine, no Slurm: one process per GPU would need PMIx, so this
# runs ONE rank on GPU 0 (the base "sharded" over one rank: no all-gathers, the gradient check
# and the whole training path otherwise), then prints the phase's records.
#
#   tests/gpu/fsdp_lora_local.sh                         # tests/gpu/fsdp-gpu.yaml: 7B shape, 4 layers
#   FSDP_CONFIG=my.yaml tests/gpu/fsdp_lora_local.sh     # another config (fsdp_lora: {...})
#   FSDP_ARGS="--layers 28 --steps 12" tests/gpu/fsdp_lora_local.sh
#   FSDP_SLURM=N tests/gpu/fsdp_lora_local.sh            # N ranks (one per GPU) through the local Slurm
#                                                        # (tests/gpu/local_slurm.sh), the all-gather path
#   FSDP_SLURM=2 FSDP_SHARE_GPU=1 tests/gpu/fsdp_lora_local.sh
#                     # N ranks on GPU 0 (a machine with one GPU): each rank a NCCL host of its
#                     # own (tests/gpu/own_host_per_rank.sh), gathers over loopback sockets; checks
#                     # the sharded path's correctness, not its speed (gpu_sharing FAIL says so)
# With 2 ranks or more the phase also runs the equivalence check (rank 0 alone replaying every
# rank's batches with the whole base) and the scaling runs (every GPU alone, each node); with one
# rank both record SKIP with the reason.
# OUT must not be under /tmp with FSDP_SLURM (local_slurm.sh says why).
#
# Exit code: the phase's (0 all PASS/SKIP, 1 a FAIL or ERROR, 2 unusable input).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
BIN=${BIN:-${GPUACCEPT_BIN:-$ROOT/build/bin}/gpuaccept-fsdp-lora}
if [[ -n ${FSDP_SLURM:-} ]]; then OUT=${OUT:-$ROOT/gpu-out/fsdp-lora}; else OUT=${OUT:-$(mktemp -d /tmp/gpuaccept-fsdp.XXXXXX)}; fi
CONFIG=${FSDP_CONFIG:-$ROOT/tests/gpu/fsdp-gpu.yaml}
[[ -x $BIN ]] || { echo "no $BIN: build it first (cmake --build build --target gpuaccept-fsdp-lora)" >&2; exit 2; }
mkdir -p "$OUT"
[[ -f tests/gpu/env.sh && -d .gpu-carry ]] && source tests/gpu/env.sh

nvidia-smi --query-gpu=index,name,driver_version,memory.total,memory.used --format=csv 2>/dev/null || true
# shellcheck disable=SC2206
args=(--results "$OUT/results" --run-id fsdp-local --config "$CONFIG" ${FSDP_ARGS:-})
if [[ -n ${FSDP_SLURM:-} ]]; then
  # The local Slurm of tests/gpu (started by local_slurm.sh), one rank per GPU.
  source tests/gpu/local_slurm.sh
  if [[ ${FSDP_SHARE_GPU:-0} == 1 ]]; then
    launch=(--kill-on-bad-exit=0 "$ROOT/tests/gpu/own_host_per_rank.sh")
  else
    launch=("${bind[@]}")
  fi
  timeout --kill-after=10 "${FSDP_TIMEOUT:-900}" srun -N1 -n "$FSDP_SLURM" --mpi=pmix "${launch[@]}" "$BIN" "${args[@]}" \
    2>&1 | tee "$OUT/fsdp-lora.log"
  rc=${PIPESTATUS[0]}
else
  export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
  # Not a Slurm task: a stray SLURM_PROCID would make the phase demand PMIx.
  unset SLURM_PROCID PMIX_NAMESPACE
  "$BIN" "${args[@]}" 2>&1 | tee "$OUT/fsdp-lora.log"
  rc=${PIPESTATUS[0]}
fi

echo
echo "=== summary (rc=$rc; results $OUT/results/fsdp-local/; log $OUT/fsdp-lora.log) ==="
sed -n '/records of rank 0:/,/ on this rank$/p' "$OUT/fsdp-lora.log" | sed -e 's/^\[[^]]*\] //' -e '/^records of rank 0:$/d'
exit "$rc"
