#!/bin/bash
# Where fsdp-lora's all-GPU step loses time against each GPU alone (the scaling gap of
# docs/performance-history.md), kernel by kernel, on N GPUs through the local Slurm. The phase runs
# twice with the CUPTI library of probes/kernel_profile.cpp injected into every rank, each
# table counting the last WINDOW_S seconds of the rank's GPU work:
#   all         only the all-GPU run (no scaling, equivalence or checkpoint): its last steps;
#   single_gpu  the scaling runs too, whose single_gpu run (every GPU alone at once) comes last.
# Each table's first line gives the kernels' summed time and the GPU's busy time (the union of
# the kernels' intervals) in the window: busy below the window is the GPU idle; kernels summing
# above busy ran side by side (NCCL's beside the compute).
#   OUT=... tests/gpu/fsdp_profile_scaling.sh [NGPU]   (after tests/gpu/prepare; default every GPU)
# FSDP_LAYERS (28), RECOMPUTE (false), WINDOW_S (3), RUNS ("all single_gpu"); FSDP_YAML: more
# fsdp_lora keys, one "key: value" a line (e.g. "bucket_mib: 200"). Tables in
# $OUT/<run>/profile-<pid>.txt.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
# Not under /tmp: every node of the local Slurm mounts its own private /tmp.
OUT=${OUT:-$root/gpu-out/profile-scaling}
mkdir -p "$OUT"
ngpu=${1:-$(nvidia-smi -L | grep -c '^GPU')}
lib=${GPUACCEPT_BIN:-$root/build/bin}/libgpuaccept_kernel_profile.so
[ -f "$lib" ] || { echo "no $lib (built where CMake finds CUPTI)"; exit 1; }
export NCCL_NVLS_ENABLE=0
# The machine may lack CUPTI; tests/gpu/prepare carries the build machine's.
[ -d "$root/.gpu-carry/lib" ] && export LD_LIBRARY_PATH=$root/.gpu-carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

for run in ${RUNS:-all single_gpu}; do
  dir=$OUT/$run
  mkdir -p "$dir"
  scaling=0
  [ "$run" = single_gpu ] && scaling=20
  cat >"$dir/fsdp.yaml" <<YAML
fsdp_lora:
  model: qwen2_7b
  layers: ${FSDP_LAYERS:-28}
  seq_len: 4096
  micro_batch: 2
  steps: 20
  timing_skip: 3
  gradient_check: false
  recompute: ${RECOMPUTE:-false}
  lr: 1.0e-3
  lr_warmup: 2
  scaling_steps: $scaling
  equivalence_steps: 0
  checkpoint:
    enabled: false
$(printf '%s\n' "${FSDP_YAML:-}" | sed -e '/^$/d' -e 's/^/  /')
YAML
  echo "=== $run: $ngpu ranks, the last ${WINDOW_S:-3} s of each rank's GPU work"
  CUDA_INJECTION64_PATH=$lib KERNEL_PROFILE_WINDOW_S=${WINDOW_S:-3} KERNEL_PROFILE_OUT=$dir/profile-%p.txt \
    FSDP_SLURM=$ngpu FSDP_CONFIG=$dir/fsdp.yaml OUT=$dir/phase \
    tests/gpu/fsdp_lora_local.sh >"$dir/phase.log" 2>&1
  echo "exit code $?"
  grep -E "fsdp-lora: (all|single_gpu): " "$dir/phase.log" | sed 's/^\[[^]]*\] //'
  for f in "$dir"/profile-*.txt; do
    [ -f "$f" ] || continue
    echo "--- $(basename "$f")"
    head -n "${ROWS:-14}" "$f"
  done
done
