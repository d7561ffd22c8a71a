#!/bin/bash
# Where the ddp step's GPU time goes, kernel by kernel, beside the compiled PyTorch anchor's,
# on one GPU (after: source tests/gpu/env.sh on the GPU machine):
#   tests/gpu/ddp_profile.sh            -> $OUT/profile-ddp.txt, $OUT/profile-torch-compile.txt
# Both programs run with the CUPTI library of probes/kernel_profile.cpp injected
# (CUDA_INJECTION64_PATH). The phase's table counts the whole steps of its last WINDOW_S seconds
# of training, with a line per step; the anchor's the last WINDOW_S seconds of GPU work.
# SKIP_TORCH=1 profiles the phase only.
# RANKS=N (default 1): the phase on N GPUs, one rank each, through the local Slurm
# (tests/gpu/local_slurm.sh), a table per rank (profile-<TAG>-<pid>.txt; the first shown): which
# kernels slow down beside the all-reduce. DDP_KEYS="all_reduce=copy_engine,...": more ddp keys.
# Each table ends with where the busiest stream (the compute stream) sat idle, by the operations
# (kernels, memsets, copies) around each gap: a step-start barrier, the wait for the last bucket,
# or the host launching late.
# TAG names this run's files (default ddp).
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
  scaling_steps: 0
  checkpoint:
    enabled: false
YAML
IFS=, read -ra kv <<<"${DDP_KEYS:-}"
for k in "${kv[@]}"; do echo "  ${k%%=*}: ${k#*=}" >>"$cfg"; done
ranks=${RANKS:-1}
tag=${TAG:-ddp}
# The phase's window: whole steps, from one cross-entropy launch (one a step: micro-batch 1) to
# the last, which is left out with what follows training (the weights' checks). Either of its
# kernels: cross_entropy_cached_kernel or cross_entropy_two_pass_kernel.
export KERNEL_PROFILE_STEP=cross_entropy_

echo "=== gpuaccept-ddp on $ranks GPU(s)${DDP_KEYS:+ ($DDP_KEYS)}, kernels of the last $window s"
if [ "$ranks" -eq 1 ]; then
  CUDA_INJECTION64_PATH=$lib KERNEL_PROFILE_WINDOW_S=$window KERNEL_PROFILE_OUT=$OUT/profile-$tag.txt \
    timeout --kill-after=10 300 "$BIN/gpuaccept-ddp" --config "$cfg" --results "$OUT/results" --run-id "$tag-profile" \
    >"$OUT/$tag-profile.log" 2>&1
  rc=$?
  echo "exit code $rc"
else
  cd "$root" || exit 1
  # shellcheck source=tests/gpu/local_slurm.sh
  source tests/gpu/local_slurm.sh >"$OUT/slurm.log" 2>&1 || { cat "$OUT/slurm.log"; exit 1; }
    CUDA_INJECTION64_PATH=$lib KERNEL_PROFILE_WINDOW_S=$window KERNEL_PROFILE_OUT=$OUT/profile-$tag-%p.txt \
    timeout --kill-after=10 300 srun -N1 -n"$ranks" --mpi=pmix "${bind[@]}" "$BIN/gpuaccept-ddp" --config "$cfg" \
    --results "$OUT/results" --run-id "$tag-profile" >"$OUT/$tag-profile.log" 2>&1
  rc=$?
  echo "exit code $rc"
  "$root/tests/cluster/down" >/dev/null 2>&1
  first=$(find "$OUT" -maxdepth 1 -name "profile-$tag-*.txt" | sort | head -n 1)
  [ -n "$first" ] && cp "$first" "$OUT/profile-$tag.txt"
fi
grep -v ' r[1-9][0-9]*/' "$OUT/$tag-profile.log" | grep -E "tokens/s|step split|averaged by" | tail -n 4
head -n 40 "$OUT/profile-$tag.txt"
# Where the compute stream waited: the idle gaps by the operations around them (probes/kernel_profile.cpp).
sed -n '/^# idle/,$p' "$OUT/profile-$tag.txt" | head -n 16

# Exit status: the phase's (and the anchor's, when it runs): a table from a failed run is no profile.
[ -n "${SKIP_TORCH:-}" ] && exit "$rc"
anchor=$root/.gpu-carry/anchors/torch_ddp_gpt2.py
[ -f "$anchor" ] || anchor=$root/../shared/anchors/torch_ddp_gpt2.py
echo "=== PyTorch anchor (compile), kernels of the last $window s"
unset KERNEL_PROFILE_STEP
CUDA_INJECTION64_PATH=$lib KERNEL_PROFILE_WINDOW_S=$window KERNEL_PROFILE_OUT=$OUT/profile-torch-compile.txt \
  torchrun --standalone --nproc_per_node=1 "$anchor" --seq 1024 --mbs 16 --steps 80 --compile \
  >"$OUT/torch-compile.log" 2>&1
torch_rc=$?
echo "exit code $torch_rc"
grep RESULT "$OUT/torch-compile.log" || tail -n 20 "$OUT/torch-compile.log"
head -n 40 "$OUT/profile-torch-compile.txt"
[ "$rc" -eq 0 ] && [ "$torch_rc" -eq 0 ]
