#!/bin/bash
# The ddp phase on every GPU, once per variant, to compare settings that change its
# communication (docs/performance.md): each variant is NAME[:VAR=VALUE,...][:key=value,...],
# environment variables for the ranks (NCCL_MAX_CTAS=8, ...) and ddp config keys
# (comm_sms=16, bucket_mib=100, ...). Prints each run's throughput line.
#   tests/gpu/ddp_variants.sh base cta8:NCCL_MAX_CTAS=8 sms16::comm_sms=16
# STEPS [40] training steps per variant (median of the steps after the first 10).
# FULL=1: each variant also runs the one-GPU baseline and the equivalence replay (scaling
# efficiency and equivalence printed too). ROUNDS [1]: the whole list again, variants
# alternating, so a difference can be told from the machine's drift.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT/results"
source tests/gpu/local_slurm.sh >"$OUT/slurm.log" 2>&1 || { cat "$OUT/slurm.log"; exit 1; }
trap 'tests/cluster/down >/dev/null 2>&1' EXIT
BIN=${GPUACCEPT_BIN:-$PWD/build/bin}
for ((round = 1; round <= ${ROUNDS:-1}; round++)); do
for variant in "$@"; do
  IFS=: read -r name envs keys <<<"$variant"
  cfg=$OUT/results/ddp-$name.yaml
  if [[ -n ${FULL:-} ]]; then
    printf 'ddp:\n  steps: %d\n  timing_skip: 10\n  equivalence_steps: 4\n  scaling_steps: 15\n  gradient_check: false\n' \
      "${STEPS:-40}" >"$cfg"
  else
    printf 'ddp:\n  steps: %d\n  timing_skip: 10\n  equivalence_steps: 0\n  scaling_steps: 0\n  gradient_check: false\n' \
      "${STEPS:-40}" >"$cfg"
  fi
  IFS=, read -ra kv <<<"$keys"
  for k in "${kv[@]}"; do printf '  %s: %s\n' "${k%%=*}" "${k#*=}" >>"$cfg"; done
  IFS=, read -ra ev <<<"$envs"
  timeout --kill-after=10 300 env "${ev[@]}" srun -N1 -n"$ngpu" --mpi=pmix "${bind[@]}" "$BIN/gpuaccept-ddp" \
    --config "$cfg" --results "$OUT/results" --run-id "ddp-$name-$round" >"$OUT/ddp-$name-$round.log" 2>&1
  echo "$name (${envs:-no env}; ${keys:-defaults}): exit $? $(grep -o 'ddp: all: .*' "$OUT/ddp-$name-$round.log" | head -n1)"
  [[ -n ${FULL:-} ]] && grep -oE 'ddp: (single_gpu: [0-9]+ tokens/s per GPU|scaling efficiency .*|equivalence (PASS|FAIL))|largest difference [^ ]+ at step [0-9]+' \
    "$OUT/ddp-$name-$round.log" | sed 's/^/    /'
done
done
