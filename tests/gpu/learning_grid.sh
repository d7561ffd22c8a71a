#!/bin/bash
# The training phases' learning check (src/train/learning_check.h, issue 39) over a grid of
# configurations on one GPU: no healthy configuration may FAIL it (a run too short to show
# learning SKIPs, naming the smallest run that would judge), and a model that cannot learn
# must FAIL it (the hidden --debug-lr-scale: 0, no update reaches the weights; -1, the loss
# climbs). About 5 minutes on one H100 (the phase binaries one rank each on GPU 0, no Slurm):
#
#   tests/gpu/learning_grid.sh              (on the GPU machine, .gpu-carry carried: it sources env.sh)
#   GRID=fsdp tests/gpu/learning_grid.sh                          (fsdp-lora only; GRID=ddp likewise)
#
# fsdp-lora: Qwen2-7B's width, layers 1 to 28, steps 6 to 30, lr 2e-4 (5 warm-up steps, the
# phase's default) and 1e-3 (2, the quick profile's), recompute on and off. ddp: GPT-2 124M,
# steps 6 to 60, lr 2e-4, 6e-4 (the default) and 1e-3, 10 warm-up steps. Gradient check,
# equivalence, scaling and the checkpoint drill are off: only the training run and its checks.
# One line per configuration (the learning verdict, loss first -> last, the trend and the
# learning-rate sum against their bounds), then the verdict of the grid. Exit code 0 when no
# healthy configuration FAILed and every fault configuration did.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 2
[[ -f tests/gpu/env.sh && -d .gpu-carry ]] && source tests/gpu/env.sh
bin=${GPUACCEPT_BIN:-$root/build/bin}
OUT=${OUT:-$(mktemp -d -p /var/tmp gpuaccept-learning.XXXXXX)}
mkdir -p "$OUT"
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
unset SLURM_PROCID PMIX_NAMESPACE  # not a Slurm task: a stray SLURM_PROCID would make the phase demand PMIx
grid=${GRID:-fsdp ddp}
nvidia-smi --query-gpu=name,power.limit,memory.total --format=csv,noheader 2>/dev/null || true

healthy_fail=0 healthy=0 faults=0 faults_failed=0 n=0
summary=()

# run PHASE "LABEL" FAULT YAML [FLAGS...]: one configuration; prints its line.
run() {
  local phase=$1 label=$2 fault=$3 yaml=$4
  shift 4
  n=$((n + 1))
  local cfg=$OUT/$phase-$n.yaml log=$OUT/$phase-$n.log flags=("$@")
  printf '%s\n' "$yaml" >"$cfg"
  [[ $fault != - ]] && flags+=(--debug-lr-scale "$fault")
  timeout --kill-after=10 240 "$bin/gpuaccept-$phase" --config "$cfg" --results "$OUT/results" --run-id "grid-$n" \
    "${flags[@]}" >"$log" 2>&1
  local rc=$?
  # "ddp: learning PASS: loss 10.9633 at step 1, 7.7433 over the last 3 of 12 steps; its trend z = 3.36 (...); 12
  # steps at lr 0.0006 with 10 warm-up steps: a learning-rate sum of 0.0039 ...; needs ... a learning-rate sum of 0.0057"
  local line status first last z sum need
  line=$(grep -o "$phase: learning [A-Z]*: .*" "$log" | tail -n 1)
  status=$(sed -n 's/^[a-z-]*: learning \([A-Z]*\):.*/\1/p' <<<"$line")
  first=$(sed -n 's/.*loss \([0-9.]*\) at step 1.*/\1/p' <<<"$line")
  last=$(sed -n 's/.* \([0-9.]*\) over the last .*/\1/p' <<<"$line")
  z=$(sed -n 's/.*trend z = \([-0-9.]*\).*/\1/p' <<<"$line")
  sum=$(sed -n 's/.*learning-rate sum of \([0-9.e-]*\) over.*/\1/p' <<<"$line")
  need=$(sed -n 's/.*the smallest run that would judge it: \([0-9]*\) steps.*/\1/p' <<<"$line")
  [[ -n $status ]] || status="none (exit $rc; $log)"
  local text
  text=$(printf '%-9s %-46s fault=%-3s learning %-5s loss %s -> %s  trend z %s (PASS from %s)  lr sum %s%s' \
    "$phase" "$label" "$fault" "$status" "${first:--}" "${last:--}" "${z:--}" 3.09 "${sum:--}" \
    "${need:+ (too short: judged from $need steps)}")
  echo "$text"
  summary+=("$text")
  if [[ $fault == - ]]; then
    healthy=$((healthy + 1))
    [[ $status == PASS || $status == SKIP ]] || healthy_fail=$((healthy_fail + 1))
  else
    faults=$((faults + 1))
    [[ $status == FAIL ]] && faults_failed=$((faults_failed + 1))
  fi
}

fsdp() {  # fsdp LAYERS STEPS LR WARMUP RECOMPUTE FAULT
  local yaml
  yaml=$(printf 'fsdp_lora:\n  model: qwen2_7b\n  layers: %s\n  seq_len: 4096\n  micro_batch: 2\n  steps: %s\n  lr: %s\n  lr_warmup: %s\n  recompute: %s\n  gradient_check: false\n  equivalence_steps: 0\n  scaling_steps: 0\n  matmul_autotune: false\n  checkpoint:\n    enabled: false\n' \
    "$1" "$2" "$3" "$4" "$5")
  run fsdp-lora "layers=$1 steps=$2 lr=$3 warmup=$4 recompute=$5" "$6" "$yaml"
}

ddp() {  # ddp STEPS LR FAULT (10 warm-up steps, the default)
  local yaml
  yaml=$(printf 'ddp:\n  steps: %s\n  lr: %s\n  lr_warmup: 10\n  gradient_check: false\n  equivalence_steps: 0\n  scaling_steps: 0\n  matmul_autotune: false\n  checkpoint:\n    enabled: false\n' \
    "$1" "$2")
  run ddp "steps=$1 lr=$2 warmup=10" "$3" "$yaml"
}

if [[ " $grid " == *" fsdp "* ]]; then
  echo "=== fsdp-lora (one rank, GPU 0)"
  fsdp 1 6 2e-4 5 true -
  fsdp 1 12 2e-4 5 true -
  fsdp 1 30 2e-4 5 false -
  fsdp 1 12 1e-3 2 true -
  fsdp 4 6 1e-3 2 true -
  fsdp 4 8 2e-4 5 true -
  fsdp 4 12 2e-4 5 false -
  fsdp 4 30 1e-3 2 true -
  fsdp 12 12 2e-4 5 true -
  fsdp 20 12 2e-4 5 true -  # issue 39's configuration: 12.65 -> 11.32 FAILed the old bound of 9.75
  fsdp 28 12 2e-4 5 true -
  fsdp 28 10 1e-3 2 true -
  fsdp 28 30 2e-4 5 false -
  fsdp 4 30 2e-4 5 true 0   # no update reaches the weights
  fsdp 4 30 2e-4 5 true -1  # the loss climbs
fi
if [[ " $grid " == *" ddp "* ]]; then
  echo "=== ddp (one rank, GPU 0)"
  ddp 6 6e-4 -
  ddp 12 2e-4 -
  ddp 12 6e-4 -
  ddp 12 1e-3 -
  ddp 30 2e-4 -
  ddp 30 6e-4 -
  ddp 30 1e-3 -
  ddp 60 6e-4 -
  ddp 30 6e-4 0
  ddp 30 6e-4 -1
fi

echo
echo "=== learning grid ($OUT)"
printf '%s\n' "${summary[@]}"
verdict_healthy=$([[ $healthy_fail == 0 ]] && echo "none" || echo "$healthy_fail")
echo "RESULT: healthy configurations that FAILed the learning check: $verdict_healthy of $healthy;" \
  "fault configurations that FAILed it: $faults_failed of $faults"
[[ $healthy_fail == 0 && $faults_failed == "$faults" ]]
