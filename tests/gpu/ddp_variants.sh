#!/bin/bash
# A training phase on every GPU, once per variant, to compare settings that change its
# communication (docs/performance-history.md): each variant is NAME[:VAR=VALUE,...][:key=value,...],
# environment variables for the ranks (NCCL_MAX_CTAS=8, ...) and config keys of the phase
# (ddp: comm_sms=16, bucket_mib=100, ...; fsdp-lora: layers=28, prefetch_layers=2, ...). Prints
# each run's throughput line.
#   tests/gpu/ddp_variants.sh base cta8:NCCL_MAX_CTAS=8 sms16::comm_sms=16
#   PHASE=fsdp-lora FULL=1 tests/gpu/ddp_variants.sh base::layers=28 cta8:NCCL_MAX_CTAS=8:layers=28
# PHASE [ddp]: ddp (GPT-2 124M, seq 1024, micro-batch 16) or fsdp-lora (tests/gpu/fsdp-gpu.yaml:
# Qwen2-7B's width, 4 layers unless a variant says layers=N).
# STEPS [40; fsdp-lora 10] training steps per variant (median of the steps after the first 10; 3).
# FULL=1: each variant also runs the one-GPU baseline and the equivalence replay (scaling
# efficiency and equivalence printed too). ROUNDS [1]: the whole list again, variants
# alternating, so a difference can be told from the machine's drift.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-$PWD/gpu-out}
PHASE=${PHASE:-ddp}
mkdir -p "$OUT/results"
source tests/gpu/local_slurm.sh >"$OUT/slurm.log" 2>&1 || { cat "$OUT/slurm.log"; exit 1; }
trap 'tests/cluster/down >/dev/null 2>&1' EXIT
BIN=${GPUACCEPT_BIN:-$PWD/build/bin}
case $PHASE in
  ddp)
    header='ddp:'
    settings=("steps: ${STEPS:-40}" "timing_skip: 10" "gradient_check: false")
    full=("equivalence_steps: 4" "scaling_steps: 15") ;;
  fsdp-lora)
    header='fsdp_lora:'
    mapfile -t settings < <(sed -n '/^fsdp_lora:/,$p' tests/gpu/fsdp-gpu.yaml | tail -n +2 | sed 's/^  //' |
                            grep -vE '^(steps|timing_skip):')
    settings+=("steps: ${STEPS:-10}" "timing_skip: 3" "gradient_check: false")
    full=("equivalence_steps: 2" "scaling_steps: 12") ;;  # 9 timed after timing_skip 3
  *) echo "PHASE=$PHASE: ddp or fsdp-lora" >&2; exit 2 ;;
esac
[[ -n ${FULL:-} ]] || full=("equivalence_steps: 0" "scaling_steps: 0")
failed=()  # the runs that exited non-zero: the exit status
for ((round = 1; round <= ${ROUNDS:-1}; round++)); do
for variant in "$@"; do
  IFS=: read -r name envs keys <<<"$variant"
  run=$PHASE-$name-$round
  cfg=$OUT/results/$run.yaml
  IFS=, read -ra kv <<<"$keys"
  # The variant's keys replace the settings of the same name (a key twice is a YAML error).
  lines=()
  for s in "${settings[@]}" "${full[@]}"; do
    skip=
    for k in "${kv[@]}"; do [[ ${s%%:*} == "${k%%=*}" ]] && skip=1; done
    [[ -n $skip ]] || lines+=("$s")
  done
  for k in "${kv[@]}"; do lines+=("${k%%=*}: ${k#*=}"); done
  { echo "$header"; printf '  %s\n' "${lines[@]}"; } >"$cfg"
  IFS=, read -ra ev <<<"$envs"
  timeout --kill-after=10 600 env "${ev[@]}" srun -N1 -n"$ngpu" --mpi=pmix "${bind[@]}" "$BIN/gpuaccept-$PHASE" \
    --config "$cfg" --results "$OUT/results" --run-id "$run" >"$OUT/$run.log" 2>&1
  rc=$?
  [ "$rc" -eq 0 ] || failed+=("$run")
  echo "$name (${envs:-no env}; ${keys:-defaults}): exit $rc $(grep -o "$PHASE: all: .*" "$OUT/$run.log" | head -n1)"
  [[ -z ${FULL:-} ]] || grep -v ' r[1-9][0-9]*/' "$OUT/$run.log" |
    grep -oE "$PHASE: (single_gpu: [0-9]+ tokens/s per GPU|scaling efficiency .*|equivalence (PASS|FAIL))|largest difference [^ ]+ at step [0-9]+" |
    sed 's/^/    /'
done
done
# Exit status 1 when a run exited non-zero (the others still ran), naming them.
if [ ${#failed[@]} -gt 0 ]; then
  echo "variants that exited non-zero: ${failed[*]}"
  exit 1
fi
