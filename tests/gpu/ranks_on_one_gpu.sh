#!/bin/bash
# The code paths that need several ranks, on a machine lent with one GPU: NRANKS ranks [4]
# share GPU 0 under the local Slurm (srun --mpi=pmix), each telling NCCL it is a host of
# its own (tests/gpu/own_host_per_rank.sh), so NCCL joins them over sockets on loopback.
# Its figures mean nothing (the ranks take turns on one GPU; the "network" is a socket), and
# each phase says so with a gpu_sharing FAIL. What it shows is that every path that needs
# several ranks works end to end:
#   nccl       nccl-scaling: every collective, float and bf16, in and out of place, each
#              size verified on the device, the scales one node has, the GPU-pair matrix
#   nccl-hang, nccl-kill   tests/gpu/nccl_kill.sh hang|kill
#   ddp        ddp: gradient buckets all-reduced during backward, learning, replicas bitwise
#              equal across ranks, 1-GPU-vs-N equivalence, scaling records (DDP_KEYS adds
#              config keys: DDP_KEYS=comm_sms=16)
#   ddp-hang, ddp-kill     tests/gpu/train_kill.sh ddp hang|kill
#   fsdp-hang, fsdp-kill   tests/gpu/train_kill.sh fsdp-lora hang|kill
# On the GPU machine, after source tests/gpu/env.sh:
#   tests/gpu/ranks_on_one_gpu.sh [step ...]      (default: all six; results under $OUT)
# Prints one "ranks_on_one_gpu: STEP ok|FAILED" line per step; exit code: failed steps.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT/results"
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(nccl nccl-hang nccl-kill ddp ddp-hang ddp-kill)
source tests/gpu/local_slurm.sh >"$OUT/slurm.log" 2>&1 || { cat "$OUT/slurm.log"; exit 1; }
trap 'tests/cluster/down >/dev/null 2>&1' EXIT
export NRANKS=${NRANKS:-4} RANK_WRAPPER=$PWD/tests/gpu/own_host_per_rank.sh GPUACCEPT_RESULTS=$OUT/results
export TIMEOUT=${TIMEOUT:-20}
BIN=${GPUACCEPT_BIN:-$PWD/build/bin}

# The phase runs (distinct NCCL_HOSTID) and records gpu_sharing FAIL: such figures are not a
# GPU's. Every other record must be a PASS or a SKIP (inter-node scales: one node).
nccl_on_shared_gpu() {
  local run=nccl-shared-$NRANKS c expect=()
  for c in all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv pair_busbw; do
    expect+=(--record-status "$c=PASS")
  done
  timeout --kill-after=10 400 srun -N1 -n"$NRANKS" --mpi=pmix --kill-on-bad-exit=0 "$RANK_WRAPPER" \
    "$BIN/gpuaccept-nccl-scaling" --results "$GPUACCEPT_RESULTS" --run-id "$run" -b 8 -e 4M -f 8 \
    --pair-bytes 4M --pair-outlier-pct 90 --timeout 60 >"$OUT/$run.log" 2>&1
  local rc=$?
  grep -v '^\[.* r[1-9][0-9]*/' "$OUT/$run.log" | tail -n 60
  echo "exit code $rc (1 expected: gpu_sharing FAIL)"
  "$BIN/results-check" "$GPUACCEPT_RESULTS/$run/nccl-scaling.h5" --phase nccl-scaling --complete yes \
    --document nccl_env "${expect[@]}" --record-status gpu_sharing=FAIL --message-contains "gpu_sharing=NCCL_HOSTID" \
    --no-status FAIL --no-status ERROR --except gpu_sharing && [ "$rc" -eq 1 ]
}

ddp_on_shared_gpu() {
  local run=ddp-shared-$NRANKS cfg=$OUT/results/ddp-shared.yaml
  # The issue's global batch (16 sequences of 1024) split over the ranks; 60 steps learn.
  printf 'ddp:\n  micro_batch: %d\n  steps: 60\n  equivalence_steps: 4\n  scaling_steps: 6\n  step_timeout_s: 120\n' \
    $((16 / NRANKS > 0 ? 16 / NRANKS : 1)) >"$cfg"
  # DDP_KEYS="comm_sms=16,bucket_mib=5": more ddp config keys, for the code paths they switch on.
  IFS=, read -ra kv <<<"${DDP_KEYS:-}"
  for k in "${kv[@]}"; do printf '  %s: %s\n' "${k%%=*}" "${k#*=}" >>"$cfg"; done
  timeout --kill-after=10 500 srun -N1 -n"$NRANKS" --mpi=pmix --kill-on-bad-exit=0 "$RANK_WRAPPER" \
    "$BIN/gpuaccept-ddp" --config "$cfg" --results "$GPUACCEPT_RESULTS" --run-id "$run" >"$OUT/$run.log" 2>&1
  local rc=$?
  grep -v '^\[.* r[1-9][0-9]*/' "$OUT/$run.log" | grep -v 'step [0-9]*/' | tail -n 30
  echo "exit code $rc (1 expected: gpu_sharing FAIL)"
  "$BIN/results-check" "$GPUACCEPT_RESULTS/$run/ddp.h5" --phase ddp --complete yes --ranks "$NRANKS" \
    --record-status gradient_check=PASS --record-status finite=PASS --record-status learning=PASS \
    --record-status replicas=PASS --record-status equivalence=PASS \
    --message-contains "scaling=at scale all" --record-status gpu_sharing=FAIL --no-status FAIL --except gpu_sharing \
    && [ "$rc" -eq 1 ]
}

failed=0
for step in "${steps[@]}"; do
  echo "=== $step: $NRANKS ranks on one GPU"
  case $step in
    nccl) nccl_on_shared_gpu ;;
    nccl-hang) tests/gpu/nccl_kill.sh hang 2>&1 | tail -n 25 ;;
    nccl-kill) tests/gpu/nccl_kill.sh kill 2>&1 | tail -n 25 ;;
    ddp) ddp_on_shared_gpu ;;
    ddp-hang) tests/gpu/train_kill.sh ddp hang 2>&1 | grep -v 'step [0-9]*/' | tail -n 25 ;;
    ddp-kill) tests/gpu/train_kill.sh ddp kill 2>&1 | grep -v 'step [0-9]*/' | tail -n 25 ;;
    fsdp-hang) tests/gpu/train_kill.sh fsdp-lora hang 2>&1 | grep -v 'step [0-9]*/' | tail -n 25 ;;
    fsdp-kill) tests/gpu/train_kill.sh fsdp-lora kill 2>&1 | grep -v 'step [0-9]*/' | tail -n 25 ;;
    *) echo "unknown step $step" >&2; false ;;
  esac
  # shellcheck disable=SC2181
  if [ "${PIPESTATUS[0]}" -eq 0 ]; then echo "ranks_on_one_gpu: $step ok"; else echo "ranks_on_one_gpu: $step FAILED"; failed=$((failed + 1)); fi
done
exit "$failed"
