#!/usr/bin/env bash
# The ways fsdp-lora can hold its frozen base, each against the random base from the seed on
# the GPU, without downloading a model:
#   seed     the base from the seed, on the GPU (the reference)
#   dir      fsdp_lora.checkpoint_dir: the same base written as a Hugging Face checkpoint
#            (fsdp-random-checkpoint: tests/gpu/fsdp-gpu.yaml's shape, Qwen2-7B's width with 4
#            layers, seed 1234; 2 safetensors shards and an index), each rank reading its pieces
#   offload  fsdp_lora.offload: cpu: the shards in pinned host memory, copied in for each gather
#   nccl     fsdp_lora.gather: nccl: the layers all-gathered by NCCL, where the seed run (the
#            default, gather: copy_engine) copies them out of the other ranks' GPUs (FSDP_SLURM=N:
#            with one rank nothing is gathered)
# Every run must print the seed run's loss at every step, bit for bit (the base's bits and the
# order of the computation are the same), and pass; the log lines on reading the base, the
# memory plan and the throughput of each run are printed beside.
#
#   tests/gpu/fsdp_base_paths.sh [seed dir offload nccl]  # one rank on GPU 0
#   FSDP_SLURM=N tests/gpu/fsdp_base_paths.sh           # N ranks through the local Slurm
#
# Exit code: 0 when every run passed and the losses agree.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
OUT=${OUT:-$ROOT/gpu-out/fsdp-base-paths}
runs=("$@")
[[ ${#runs[@]} -gt 0 ]] || runs=(seed dir offload nccl)
mkdir -p "$OUT"
[[ -f tests/gpu/env.sh && -d .gpu-carry ]] && source tests/gpu/env.sh
BIN=${GPUACCEPT_BIN:-$ROOT/build/bin}
ckpt=$OUT/qwen2_7b-4layers
rm -rf "$ckpt"
t0=$SECONDS
"$BIN/fsdp-random-checkpoint" "$ckpt" qwen2_7b 4 1234 2 || exit 1
echo "checkpoint written in $((SECONDS - t0)) s: $(du -sh "$ckpt" | cut -f1), $(ls "$ckpt" | tr '\n' ' ')"

# The run's settings beside the config's: the equivalence and scaling runs read the base too.
sed -n '1,/^fsdp_lora:/p' tests/gpu/fsdp-gpu.yaml >"$OUT/seed.yaml"
sed -n '/^fsdp_lora:/,$p' tests/gpu/fsdp-gpu.yaml | tail -n +2 >>"$OUT/seed.yaml"
# Autotuning picks matmul algorithms by timing, so two processes may differ in the last bits:
# off here, each shape gets the heuristic's first choice in every run.
printf '  gradient_check: false\n  seed: 1234\n  matmul_autotune: false\n' >>"$OUT/seed.yaml"
cp "$OUT/seed.yaml" "$OUT/dir.yaml"
printf '  checkpoint_dir: %s\n' "$ckpt" >>"$OUT/dir.yaml"
# With offload the gradient check runs too: the tiny base's shards offloaded, against float64.
sed 's/gradient_check: false/gradient_check: true/' "$OUT/seed.yaml" >"$OUT/offload.yaml"
printf '  offload: cpu\n' >>"$OUT/offload.yaml"
cp "$OUT/seed.yaml" "$OUT/nccl.yaml"
printf '  gather: nccl\n' >>"$OUT/nccl.yaml"

rc=0
for run in "${runs[@]}"; do
  echo "=== fsdp-lora, base: $run"
  t0=$SECONDS
  cfg=$OUT/$run.yaml log=$OUT/$run.log
  OUT=$OUT/$run FSDP_CONFIG=$cfg tests/gpu/fsdp_lora_local.sh >"$log" 2>&1
  run_rc=$?
  [[ $run_rc -eq 0 ]] || rc=1
  echo "exit $run_rc after $((SECONDS - t0)) s"
  grep -E 'base from|base read|gathers by|memory plan|: all: |memory +peak_used|gradient_check +loss|verdict' "$OUT/$run.log" |
    grep -v ' r[1-9][0-9]*/' | sed -e 's/^\[[^]]*\] //' | cut -c1-250 | head -n 40
  grep -v ' r[1-9][0-9]*/' "$OUT/$run.log" | grep -oE 'step [0-9]+/[0-9]+ all: loss [0-9.]+' >"$OUT/$run.losses"
  tests/cluster/down >/dev/null 2>&1 || true  # FSDP_SLURM: each run starts the local Slurm afresh
done
tests/cluster/down >/dev/null 2>&1 || true
for run in "${runs[@]}"; do
  [[ $run == seed ]] && continue
  if [[ -s $OUT/seed.losses ]] && cmp -s "$OUT/seed.losses" "$OUT/$run.losses"; then
    echo "losses, $run: the seed run's at all $(wc -l <"$OUT/seed.losses") steps"
  else
    echo "losses, $run: differ from the seed run's (or are missing):"
    diff "$OUT/seed.losses" "$OUT/$run.losses" | head -n 20
    rc=1
  fi
done
exit "$rc"
