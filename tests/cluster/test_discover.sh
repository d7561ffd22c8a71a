#!/bin/bash
# discover on the two-node cluster: one file holding four ranks from two hosts; the library
# versions and the Slurm client against this cluster's own slurmctld; the fabric judged as the
# config says (the test cluster is Ethernet on purpose: configs/local.yaml; without that, two
# nodes with no RDMA port FAIL); a second run in the same run directory does not overwrite the
# first.
set -euo pipefail
run="discover-test-$$"
root="$GPUACCEPT_RESULTS"
local_config="$GPUACCEPT_SOURCE/configs/local.yaml"
srun -N2 -n4 --ntasks-per-node=2 --mpi=pmix "$GPUACCEPT_BIN/gpuaccept-discover" --results "$root" --run-id "$run" \
  --config "$local_config" | tee "/tmp/$run.log"
file="$root/$run/discover.h5"
"$RESULTS_CHECK" "$file" --phase discover --ranks 4 --hosts 2 --document inventory --complete yes \
  --record-status gpus_per_node=SKIP --message-contains gpus_per_node=NVML \
  --record-status slurm_client=PASS --message-contains "slurm_client=matches slurmctld" \
  --record-status library_versions=PASS --message-contains library_versions=NCCL \
  --record-status fabric_ports=SKIP --message-contains "fabric_ports=fabric.transport is tcp" --no-status FAIL
# Every phase keeps each node's RDMA port counters, at its start and its end (no port here).
"$RESULTS_CHECK" "$file" --hosts 2 --node-document port_counters

# The default fabric is RDMA: two nodes without a port FAIL, each by name.
if srun -N2 -n2 --mpi=pmix "$GPUACCEPT_BIN/gpuaccept-discover" --results "$root" --run-id "$run-rdma" >"/tmp/$run-rdma.log"; then
  echo "discover passed two nodes without an RDMA port on the default (RDMA) fabric"; exit 1
fi
"$RESULTS_CHECK" "$root/$run-rdma/discover.h5" --record "fabric_ports FAIL" \
  --message-contains "fabric_ports=no RDMA port (InfiniBand or RoCE) found on a multi-node run"
rm -rf "${root:?}/$run-rdma"
grep -q "inventory of 4 ranks" "/tmp/$run.log"
[ ! -d "$root/$run/discover.parts" ] || { echo "checkpoint parts left behind"; exit 1; }

before=$(sha256sum "$file")
srun -N2 -n2 --mpi=pmix "$GPUACCEPT_BIN/gpuaccept-discover" --results "$root" --run-id "$run" --config "$local_config" >/dev/null
[ "$(sha256sum "$file")" = "$before" ] || { echo "the second run changed $file"; exit 1; }
"$RESULTS_CHECK" "$root/$run/discover-2.h5" --ranks 2 --hosts 2

# Without --run-id each srun is its own Slurm job, so its own run directory.
out=$(srun -N2 -n2 --mpi=pmix "$GPUACCEPT_BIN/gpuaccept-discover" --results "$root" --config "$local_config")
dir=$(sed -n 's/.*results to \(.*\)$/\1/p' <<<"$out" | head -n1)
[ -f "$dir/discover.h5" ] && [ "$dir" != "$root/$run" ]
rm -rf "${root:?}/$run"
echo "discover: ok"
