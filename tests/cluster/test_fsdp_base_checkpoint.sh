#!/bin/bash
# fsdp_lora.checkpoint_dir under srun --mpi=pmix on two nodes without GPUs. Every rank opens
# and checks the checkpoint before any GPU work:
#   - the phase's own random base written as a Hugging Face checkpoint (2 shards and an index,
#     fsdp-random-checkpoint) passes the check, and the phase then SKIPs (no GPU), not ERROR;
#   - a checkpoint of another model is refused on every rank naming the file and the tensor;
#   - a path no node has ends both ranks together, each named, verdict ERROR (exit 1, no hang).
set -euo pipefail
dir=$GPUACCEPT_RESULTS/fsdp-base-checkpoint-$$
rm -rf "$dir"
mkdir -p "$dir"
"$GPUACCEPT_BIN/fsdp-random-checkpoint" "$dir/tiny" tiny 2 1234 2
config() {  # config NAME MODEL CHECKPOINT_DIR
  printf 'fsdp_lora:\n  model: %s\n  data_vocab: 8\n  checkpoint_dir: %s\n' "$2" "$3" >"$dir/$1.yaml"
}
config good tiny "$dir/tiny"
config wrong qwen2_0_5b "$dir/tiny"
config missing tiny /nonexistent/qwen2-checkpoint
run() {  # run NAME: the phase on 2 ranks of 2 nodes; its output in $out, exit code in $rc
  set +e
  out=$(timeout 120 srun -N2 -n2 --mpi=pmix "$GPUACCEPT_BIN/gpuaccept-fsdp-lora" --results "$dir/results" \
    --run-id "$1" --config "$dir/$1.yaml" 2>&1)
  rc=$?
  set -e
  echo "$out"
}

run good
[ "$rc" -eq 0 ] || { echo "good checkpoint: exit $rc, expected 0 (SKIP without a GPU)"; exit 1; }
grep -q "base from $dir/tiny (2 files" <<<"$out"
grep -q "fsdp-lora verdict: SKIP" <<<"$out"

run wrong
[ "$rc" -eq 1 ] || { echo "wrong model: exit $rc, expected 1 (verdict ERROR)"; exit 1; }
grep -q "fsdp-lora verdict: ERROR" <<<"$out"
grep -q "model-00001-of-00002.safetensors: tensor 'model.embed_tokens.weight': shape: expected" <<<"$out"
grep -q "rank 0: " <<<"$out" && grep -q "rank 1: " <<<"$out"

run missing
[ "$rc" -eq 1 ] || { echo "missing checkpoint: exit $rc, expected 1 (verdict ERROR; 124 is a hang)"; exit 1; }
grep -q "rank 0: /nonexistent/qwen2-checkpoint: no such checkpoint directory or file; rank 1: " <<<"$out"
rm -rf "$dir"
echo "fsdp base checkpoint: ok"
