#!/bin/bash
# smoke on the two-node cluster: the Slurm, binding and shared-filesystem checks run
# for real (GPU checks SKIP with their reason); then, with each node writing to its own
# private /tmp, the filesystem check FAILs and names both nodes.
set -euo pipefail
root="$GPUACCEPT_RESULTS"
config="$GPUACCEPT_SOURCE/configs/local.yaml"
run="smoke-test-$$"
srun -N2 --ntasks-per-node=2 --mpi=pmix "$GPUACCEPT_BIN/gpuaccept-smoke" --config "$config" \
  --results "$root" --run-id "$run" | tee "/tmp/$run.log"
"$RESULTS_CHECK" "$root/$run/smoke.h5" --phase smoke --ranks 4 --hosts 2 --complete yes --no-status FAIL --no-status ERROR \
  --record-status slurm_controller=PASS --record-status slurm_partition=PASS --record-status slurm_nodes=PASS \
  --record-status shared_fs=PASS --record-status shared_fs_metadata=PASS --record-status shared_fs_stream=PASS \
  --record-status gemm=SKIP --record-status gpu_health=SKIP --record-status memory_bandwidth=SKIP \
  --message-contains gemm="no CUDA device" --message-contains gpu_health=NVML \
  --message-contains slurm_nodes=gpa-node2
# Progress: one line per step from rank 0.
grep -q "step 3/.* shared_fs" "/tmp/$run.log" || { echo "no progress line for shared_fs"; exit 1; }
[ ! -e "$root/$run/smoke.fs" ] || { echo "the token directory was left behind"; exit 1; }

# Each node of the test cluster has its own /tmp: not a shared filesystem.
private="$root/$run-private.yaml"  # the config itself must be readable on both nodes
printf 'smoke:\n  require_exclusive_cpus: false\n  fs_dir: /tmp/gpuaccept-not-shared-%s\n' "$$" >"$private"
set +e
srun -N2 -n2 --mpi=pmix "$GPUACCEPT_BIN/gpuaccept-smoke" --config "$private" --results "$root" --run-id "$run-private" \
  >"/tmp/$run-private.log" 2>&1
rc=$?
set -e
[ "$rc" -ne 0 ] || { echo "smoke exited 0 although the filesystem is not shared"; exit 1; }
"$RESULTS_CHECK" "$root/$run-private/smoke.h5" --record-status shared_fs=FAIL \
  --message-contains "shared_fs=gpa-node1 cannot see the file gpa-node2" \
  --message-contains "shared_fs=gpa-node2 cannot see the file gpa-node1"
grep -q "smoke verdict: FAIL" "/tmp/$run-private.log"
rm -rf "${root:?}/$run" "${root:?}/$run-private" "$private"
echo "smoke: ok"
