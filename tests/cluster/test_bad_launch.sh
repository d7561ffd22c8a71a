#!/bin/bash
# Launch mistakes get a clear message and stop before any work.
set -euo pipefail
# An unwritable results directory (a path under a regular file: root can write anywhere else).
set +e
out=$(srun -N2 -n2 --mpi=pmix "$GPUACCEPT_BIN/gpuaccept-discover" --results /etc/hostname/results 2>&1)
rc=$?
set -e
echo "$out"
[ $rc -ne 0 ] || { echo "expected a non-zero exit"; exit 1; }
grep -q "results directory /etc/hostname/results/.* cannot be created" <<<"$out"
! grep -q "inventory of" <<<"$out" || { echo "work started before the results directory was checked"; exit 1; }

# srun without PMIx: the error names the missing flag.
set +e
out=$(srun -N1 -n1 --mpi=none "$GPUACCEPT_BIN/gpuaccept-discover" --results "$GPUACCEPT_RESULTS" 2>&1)
rc=$?
set -e
echo "$out"
[ $rc -eq 2 ] && grep -q -- "--mpi=pmix" <<<"$out"
echo "bad launch: ok"
