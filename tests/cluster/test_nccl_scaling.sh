#!/bin/bash
# nccl-scaling on the two-node cluster without GPUs: every record SKIPs with the reason,
# the file is complete and the exit code is 0 (nothing failed; nothing measured).
set -euo pipefail
root="$GPUACCEPT_RESULTS"
run="nccl-test-$$"
srun -N2 --ntasks-per-node=2 --mpi=pmix "$GPUACCEPT_BIN/gpuaccept-nccl-scaling" \
  --config "$GPUACCEPT_SOURCE/configs/local.yaml" --results "$root" --run-id "$run" | tee "/tmp/$run.log"
file="$root/$run/nccl-scaling.h5"
"$RESULTS_CHECK" "$file" --phase nccl-scaling --complete yes --all-status SKIP
grep -q "nccl-scaling verdict: SKIP" "/tmp/$run.log"
grep -q "no CUDA device" "/tmp/$run.log"
rm -rf "${root:?}/$run"
echo "nccl-scaling: ok"
