#!/bin/bash
# nccl-scaling's hca_loopback step on the GPU machine (issue 37). The machine has no RDMA port,
# so the step SKIPs as on any node without one; with the hidden --debug-loopback-without-rdma
# it runs anyway over what NCCL finds with P2P and SHM off (NET/Socket here), which exercises
# the whole path: the node's NCCL id through World, a child process per rank
# (gpuaccept-nccl-loopback) with NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1, the verified
# all-reduce, the answers gathered, the record and the transport the children's NCCL logged.
#   tests/gpu/hca_loopback.sh        (2 GPUs or more; carry .gpu-carry)
# Expected: without the flag a SKIP naming the missing RDMA port; with it a record whose
# transport is NET/Socket and whose all-reduce verified (no wrong elements).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
source tests/gpu/env.sh
source tests/gpu/local_slurm.sh || exit 1  # ngpu, the cluster's exports, bind
results=$OUT/loopback
status=0
for flag in "" --debug-loopback-without-rdma; do
  echo "=== hca_loopback on $ngpu GPUs ${flag:-(as an operator runs it)}"
  # shellcheck disable=SC2086  # the flag is one word or none
  srun -N1 -n"$ngpu" --mpi=pmix "${bind[@]}" "$GPUACCEPT_BIN/gpuaccept-nccl-scaling" --scales hca_loopback $flag \
    --results "$results" --run-id "loopback${flag:+-debug}" 2>&1 | tee "$OUT/loopback${flag:+-debug}.log" | grep -E "hca_loopback|verdict"
done
grep -q "SKIP  hca_loopback\|no active RDMA port" "$OUT/loopback.log" || { echo "hca_loopback: no SKIP without RDMA ports" >&2; status=1; }
grep -E "hca_loopback on .*NET/Socket" "$OUT/loopback-debug.log" || { echo "hca_loopback: the debug run did not report NET/Socket" >&2; status=1; }
"$GPUACCEPT_BIN/results-check" "$results/loopback-debug/nccl-scaling.h5" --record-status hca_loopback=PASS || status=1
tests/cluster/down >/dev/null 2>&1 || true
exit $status
