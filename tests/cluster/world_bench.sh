#!/bin/bash
# World's PMIx collectives (barrier, verdict gather, result gather) against rank count on the
# local two-node cluster (issue 18, part 5; figures in docs/performance.md). Not part of make
# test: a benchmark. Ranks past the nodes' CPUs are overcommitted (srun -O): the figures then
# include the wait for a CPU, which is what this 2-core machine can show.
#   tests/cluster/with_cluster.sh build/tests/cluster/cluster.env tests/cluster/world_bench.sh [RANKS...]
set -euo pipefail
bench=${WORLD_BENCH:-$GPUACCEPT_BIN/world-bench}
[[ -x $bench ]] || { echo "no $bench: build it (cmake --build build --target world-bench)" >&2; exit 2; }
counts=("$@")
[[ ${#counts[@]} -gt 0 ]] || counts=(2 4 8 16 32 64)
for n in "${counts[@]}"; do
  srun -N2 -n "$n" -O --mpi=pmix --time=00:05:00 "$bench" --repeats "${REPEATS:-20}" --record-bytes "${RECORD_BYTES:-16384}"
done
