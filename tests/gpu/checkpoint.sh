#!/usr/bin/env bash
# The training checkpoint drill on the lent GPU machine (train/checkpoint_drill.h), both
# phases, one rank on GPU 0, and dd side by side on the same filesystem with the same bytes:
#   1. ddp, GPT-2 124M: the state (fp32 weights and AdamW's moments, 1.49 GB) saved after
#      step 10, restored at the end, steps 11-12 run again and compared bit for bit;
#   2. fsdp-lora, Qwen2-7B's shape with 4 layers: the LoRA state, the same way; then again with
#      checkpoint.include_base (the base's 3.8 GB of bf16 shards saved and restored too);
#   3. dd bs=16M conv=fsync of the ddp checkpoint's size into the same directory, and a read
#      of it with the cache dropped (iflag=direct), for the checkpoint-vs-dd comparison.
# With CKPT_SHARE=2 (and the local Slurm of tests/gpu): fsdp-lora on 2 ranks sharing GPU 0
# (tests/gpu/own_host_per_rank.sh): each rank writes its half, the restore's NCCL broadcasts.
# With CKPT_RANKS=N (several GPUs): fsdp-lora with checkpoint.include_base on N GPUs, one rank
# per GPU bound by the local Slurm's GRES: each rank saves and restores its own base shards.
#
#   OUT=$PWD/gpu-out/ckpt tests/gpu/checkpoint.sh            (OUT must not be under /tmp with CKPT_SHARE)
# Exit code: 0 when every phase passed its checkpoint records.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
OUT=${OUT:-$ROOT/gpu-out/checkpoint}
mkdir -p "$OUT"
[[ -f tests/gpu/env.sh && -d .gpu-carry ]] && source tests/gpu/env.sh
BIN=${GPUACCEPT_BIN:-$ROOT/build/bin}
export NCCL_NVLS_ENABLE=0
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
rc=0
df -h "$OUT" | tail -n 1

cat >"$OUT/ddp.yaml" <<'EOF'
ddp:
  model: gpt2_124m
  micro_batch: 16
  seq_len: 1024
  steps: 14
  timing_skip: 4
  gradient_check: false
  equivalence_steps: 0
  scaling_steps: 0
  checkpoint: {step: 10, resume_steps: 2}
EOF
cat >"$OUT/fsdp.yaml" <<'EOF'
fsdp_lora:
  model: qwen2_7b
  layers: 4
  seq_len: 4096
  micro_batch: 2
  steps: 8
  timing_skip: 3
  lr: 1.0e-3
  lr_warmup: 2
  gradient_check: false
  equivalence_steps: 0
  scaling_steps: 0
  checkpoint: {step: 4, resume_steps: 2}
EOF

one_rank() {  # one_rank PHASE CONFIG [NAME]: one process, no Slurm; its log and run id take NAME
  local phase=$1 config=$2 name=${3:-$1}
  echo "=== $name, one rank"
  ( unset SLURM_PROCID PMIX_NAMESPACE
    "$BIN/gpuaccept-$phase" --results "$OUT/results" --run-id "ckpt-$name" --config "$config" ) >"$OUT/$name.log" 2>&1
  local r=$?
  grep -E 'checkpoint|resume|: all: ' "$OUT/$name.log" | sed -e 's/^\[[^]]*\] //' | grep -v '^  ' | head -n 30
  grep -E 'PASS|FAIL' "$OUT/$name.log" | grep -E 'checkpoint_save +write_bandwidth' | sed -e 's/^\[[^]]*\] //' | head -n 2
  grep -qE "checkpoint resume PASS" "$OUT/$name.log" || { echo "$name: no checkpoint resume PASS (rc $r)"; rc=1; }
}
one_rank ddp "$OUT/ddp.yaml"

# dd beside the ddp checkpoint, the same bytes (the rank file's size), the same directory.
ckpt_dir=$OUT/results/ckpt-ddp/checkpoints/ddp
file=$(ls "$ckpt_dir"/step-*/rank-00000.safetensors 2>/dev/null | head -n 1)
if [[ -n $file ]]; then
  bytes=$(stat -c %s "$file")
  count=$(( (bytes + 16777215) / 16777216 ))
  echo "=== dd: $count x 16 MiB (the checkpoint file: $bytes bytes) into $ckpt_dir"
  for i in 1 2; do
    dd if=/dev/zero of="$ckpt_dir/dd.tmp" bs=16M count="$count" conv=fsync 2>&1 | tail -n 1
    dd if="$ckpt_dir/dd.tmp" of=/dev/null bs=16M iflag=direct 2>&1 | tail -n 1
    rm -f "$ckpt_dir/dd.tmp"
  done
fi

one_rank fsdp-lora "$OUT/fsdp.yaml"
sed 's/checkpoint: {step: 4, resume_steps: 2}/checkpoint: {step: 4, resume_steps: 2, include_base: true}/' \
  "$OUT/fsdp.yaml" >"$OUT/fsdp-base.yaml"
one_rank fsdp-lora "$OUT/fsdp-base.yaml" fsdp-lora-base

if [[ -n ${CKPT_SHARE:-} ]]; then
  echo "=== fsdp-lora, $CKPT_SHARE ranks sharing GPU 0 through the local Slurm"
  source tests/gpu/local_slurm.sh
  timeout --kill-after=10 600 srun -N1 -n "$CKPT_SHARE" --mpi=pmix --kill-on-bad-exit=0 "$ROOT/tests/gpu/own_host_per_rank.sh" \
    "$BIN/gpuaccept-fsdp-lora" --results "$OUT/results" --run-id ckpt-fsdp-shared --config "$OUT/fsdp.yaml" \
    --layers 2 --seq-len 1024 --micro-batch 1 >"$OUT/fsdp-shared.log" 2>&1
  grep -E 'checkpoint|resume' "$OUT/fsdp-shared.log" | grep -v ' r[1-9]/' | sed -e 's/^\[[^]]*\] //' | head -n 20
  grep -qE "checkpoint resume PASS" "$OUT/fsdp-shared.log" || { echo "fsdp-lora shared: no checkpoint resume PASS"; rc=1; }
  ls -la "$OUT"/results/ckpt-fsdp-shared/checkpoints/fsdp-lora/step-*/ 2>/dev/null
fi
if [[ -n ${CKPT_RANKS:-} ]]; then
  echo "=== fsdp-lora with include_base, $CKPT_RANKS ranks, one per GPU, through the local Slurm"
  [[ -n ${ngpu:-} ]] || source tests/gpu/local_slurm.sh >"$OUT/slurm.log" 2>&1 || { echo "local Slurm did not start"; exit 1; }
  # Slurm gives each task its GPU; GPU 0 alone (above) is for the one-rank runs.
  ( unset CUDA_VISIBLE_DEVICES
    timeout --kill-after=10 600 srun -N1 -n "$CKPT_RANKS" --mpi=pmix --kill-on-bad-exit=0 "${bind[@]}" \
      "$BIN/gpuaccept-fsdp-lora" --results "$OUT/results" --run-id ckpt-fsdp-ranks --config "$OUT/fsdp-base.yaml" ) \
    >"$OUT/fsdp-ranks.log" 2>&1
  grep -E 'checkpoint|resume' "$OUT/fsdp-ranks.log" | grep -v ' r[1-9][0-9]*/' | sed -e 's/^\[[^]]*\] //' | head -n 20
  grep -qE "checkpoint resume PASS" "$OUT/fsdp-ranks.log" || { echo "fsdp-lora $CKPT_RANKS ranks: no checkpoint resume PASS"; rc=1; }
  ls -la "$OUT"/results/ckpt-fsdp-ranks/checkpoints/fsdp-lora/step-*/ 2>/dev/null
fi
cat "$ckpt_dir"/step-*/manifest.json 2>/dev/null | head -c 600; echo
exit "$rc"
