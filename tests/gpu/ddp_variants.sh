#!/bin/bash
# The ddp phase on every GPU, once per variant, to compare settings that change its
# communication (docs/performance.md): each variant is NAME[:VAR=VALUE,...][:key=value,...],
# environment variables for the ranks (NCCL_MAX_CTAS=8, ...) and ddp config keys
# (comm_sms=16, bucket_mib=100, ...). Prints each run's throughput line.
#   tests/gpu/ddp_variants.sh base cta8:NCCL_MAX_CTAS=8 sms16::comm_sms=16
# STEPS [40] training steps per variant (median of the steps after the first 10).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT/results"
source tests/gpu/local_slurm.sh >"$OUT/slurm.log" 2>&1 || { cat "$OUT/slurm.log"; exit 1; }
trap 'tests/cluster/down >/dev/null 2>&1' EXIT
BIN=${GPUACCEPT_BIN:-$PWD/build/bin}
for variant in "$@"; do
  IFS=: read -r name envs keys <<<"$variant"
  cfg=$OUT/results/ddp-$name.yaml
  printf 'ddp:\n  steps: %d\n  timing_skip: 10\n  equivalence_steps: 0\n  scaling_steps: 0\n  gradient_check: false\n' \
    "${STEPS:-40}" >"$cfg"
  IFS=, read -ra kv <<<"$keys"
  for k in "${kv[@]}"; do printf '  %s: %s\n' "${k%%=*}" "${k#*=}" >>"$cfg"; done
  IFS=, read -ra ev <<<"$envs"
  timeout --kill-after=10 300 env "${ev[@]}" srun -N1 -n"$ngpu" --mpi=pmix "${bind[@]}" "$BIN/gpuaccept-ddp" \
    --config "$cfg" --results "$OUT/results" --run-id "ddp-$name" >"$OUT/ddp-$name.log" 2>&1
  echo "$name (${envs:-no env}; ${keys:-defaults}): exit $? $(grep -o 'ddp: all: .*' "$OUT/ddp-$name.log" | head -n1)"
done
