#!/bin/bash
# discover on the two-node cluster: one file holding four ranks from two hosts;
# a second run in the same run directory does not overwrite the first.
set -euo pipefail
run="discover-test-$$"
root="$GPUACCEPT_RESULTS"
srun -N2 -n4 --ntasks-per-node=2 --mpi=pmix "$GPUACCEPT_BIN/gpuaccept-discover" --results "$root" --run-id "$run" | tee "/tmp/$run.log"
file="$root/$run/discover.h5"
"$RESULTS_CHECK" "$file" --phase discover --ranks 4 --hosts 2 --document inventory --complete yes \
  --record-status gpus_per_node=SKIP --message-contains gpus_per_node=NVML
grep -q "inventory of 4 ranks" "/tmp/$run.log"
[ ! -d "$root/$run/discover.parts" ] || { echo "checkpoint parts left behind"; exit 1; }

before=$(sha256sum "$file")
srun -N2 -n2 --mpi=pmix "$GPUACCEPT_BIN/gpuaccept-discover" --results "$root" --run-id "$run" >/dev/null
[ "$(sha256sum "$file")" = "$before" ] || { echo "the second run changed $file"; exit 1; }
"$RESULTS_CHECK" "$root/$run/discover-2.h5" --ranks 2 --hosts 2

# Without --run-id each srun is its own Slurm job, so its own run directory.
out=$(srun -N2 -n2 --mpi=pmix "$GPUACCEPT_BIN/gpuaccept-discover" --results "$root")
dir=$(sed -n 's/.*results to \(.*\)$/\1/p' <<<"$out" | head -n1)
[ -f "$dir/discover.h5" ] && [ "$dir" != "$root/$run" ]
rm -rf "${root:?}/$run"
echo "discover: ok"
