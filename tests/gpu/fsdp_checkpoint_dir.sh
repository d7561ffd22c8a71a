#!/usr/bin/env bash
# fsdp_lora.checkpoint_dir on the GPU machine, without downloading a model: the phase's own
# random base (tests/gpu/fsdp-gpu.yaml's shape: Qwen2-7B's width, 4 layers, seed 1234) written
# as a Hugging Face checkpoint (fsdp-random-checkpoint: 2 safetensors shards and an index), then
# the phase twice on the same GPUs, from the seed and from that directory. The two runs must
# print the same loss at every step, bit for bit, and both pass; the time to read the base and
# its progress lines are printed.
#
#   tests/gpu/fsdp_checkpoint_dir.sh            # one rank on GPU 0
#   FSDP_SLURM=N tests/gpu/fsdp_checkpoint_dir.sh   # N ranks through the local Slurm (each reads its pieces)
#
# Exit code: 0 when both runs passed and their losses agree.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
OUT=${OUT:-$ROOT/gpu-out/fsdp-ckpt-dir}
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
printf '  gradient_check: false\n  seed: 1234\n' >>"$OUT/seed.yaml"
cp "$OUT/seed.yaml" "$OUT/dir.yaml"
printf '  checkpoint_dir: %s\n' "$ckpt" >>"$OUT/dir.yaml"

rc=0
for run in seed dir; do
  echo "=== fsdp-lora, base from the $run"
  t0=$SECONDS
  cfg=$OUT/$run.yaml log=$OUT/$run.log
  OUT=$OUT/$run FSDP_CONFIG=$cfg tests/gpu/fsdp_lora_local.sh >"$log" 2>&1
  run_rc=$?
  [[ $run_rc -eq 0 ]] || rc=1
  echo "exit $run_rc after $((SECONDS - t0)) s"
  grep -E 'base from|base read|verdict' "$OUT/$run.log" | grep -v ' r[1-9][0-9]*/' | sed -e 's/^\[[^]]*\] //' | head -n 40
  grep -v ' r[1-9][0-9]*/' "$OUT/$run.log" | grep -oE 'step [0-9]+/[0-9]+ all: loss [0-9.]+' >"$OUT/$run.losses"
  tests/cluster/down >/dev/null 2>&1 || true  # FSDP_SLURM: each run starts the local Slurm afresh
done
tests/cluster/down >/dev/null 2>&1 || true
if [[ -s $OUT/seed.losses ]] && cmp -s "$OUT/seed.losses" "$OUT/dir.losses"; then
  echo "losses: the same at all $(wc -l <"$OUT/seed.losses") steps"
else
  echo "losses differ (or are missing):"
  diff "$OUT/seed.losses" "$OUT/dir.losses" | head -n 20
  rc=1
fi
exit "$rc"
