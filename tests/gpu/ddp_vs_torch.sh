#!/bin/bash
# The ddp phase against the PyTorch anchor (../shared/anchors/torch_ddp_gpt2.py, carried
# as .gpu-carry/anchors/) on the same GPUs, in one call, for docs/performance.md:
#   tests/gpu/ddp_vs_torch.sh [NGPU]      (after: source tests/gpu/env.sh on the GPU machine)
# 1. ddp-kernel-tests: every kernel of phases/ddp/gpu/kernels against a CPU loop, and
#    flash-attention-tests --no-timing: src/train's attention both phases call;
# 2. gpuaccept-ddp on NGPU GPUs (default: all): one process per GPU under the local Slurm
#    (tests/gpu/local_slurm.sh starts it) with srun --mpi=pmix, or alone when NGPU is 1;
# 3. torchrun of the anchor, eager and with torch.compile, same model, batch and GPUs
#    (SKIP_TORCH=1 leaves it out; TORCH_MODES="compile" runs only the compiled one).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
OUT=${OUT:-$(mktemp -d -p /var/tmp)}  # not /tmp: each Slurm node has its own
mkdir -p "$OUT"
BIN=${GPUACCEPT_BIN:-$root/build/bin}
ngpu=${1:-$(nvidia-smi -L | grep -c '^GPU')}
export NCCL_NVLS_ENABLE=0
cd "$root" || exit 1
if [ "$ngpu" -gt 1 ]; then
  want=$ngpu
  source tests/gpu/local_slurm.sh >"$OUT/slurm.log" 2>&1 || { cat "$OUT/slurm.log"; exit 1; }
  ngpu=$want
  trap 'tests/cluster/down >/dev/null 2>&1' EXIT
fi

echo "=== kernel tests"
"$BIN/ddp-kernel-tests" 2>&1 | tee "$OUT/ddp-kernel-tests.log" | tail -n 40
"$BIN/flash-attention-tests" --no-timing 2>&1 | tee "$OUT/flash-attention-tests.log" | grep -v ' PASS$'

echo "=== gpuaccept-ddp on $ngpu GPU(s)"
cfg=${DDP_CONFIG:-$here/ddp-gpu.yaml}
if [ "$ngpu" -eq 1 ]; then
  timeout --kill-after=10 "${DDP_TIMEOUT:-300}" "$BIN/gpuaccept-ddp" --config "$cfg" --results "$OUT/results" --run-id ddp-1gpu >"$OUT/ddp.log" 2>&1
else
  timeout --kill-after=10 "${DDP_TIMEOUT:-300}" srun -N1 -n"$ngpu" --mpi=pmix "${bind[@]}" "$BIN/gpuaccept-ddp" \
    --config "$cfg" --results "$OUT/results" --run-id "ddp-${ngpu}gpu" >"$OUT/ddp.log" 2>&1
fi
echo "exit code $?"
grep -v '^\[.* r[1-9][0-9]*/' "$OUT/ddp.log" | tail -n 60

anchor=$root/.gpu-carry/anchors/torch_ddp_gpt2.py
[ -f "$anchor" ] || anchor=$root/../shared/anchors/torch_ddp_gpt2.py
[ -n "${SKIP_TORCH:-}" ] && exit 0  # SKIP_TORCH=1: the phase only (PyTorch measured in an earlier call)
for mode in ${TORCH_MODES:-eager compile}; do
  echo "=== PyTorch anchor ($mode) on $ngpu GPU(s)"
  flag=()
  [ "$mode" = compile ] && flag=(--compile)
  torchrun --standalone --nproc_per_node="$ngpu" "$anchor" --seq 1024 --mbs 16 "${flag[@]}" >"$OUT/torch-$mode.log" 2>&1
  grep RESULT "$OUT/torch-$mode.log" || tail -n 20 "$OUT/torch-$mode.log"
done
