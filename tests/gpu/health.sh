#!/bin/bash
# gpuaccept-health on the lent GPU machine: the healthy node's one line and time, then the
# same with a wrong expectation (one GPU more than there is), which must exit 1 with the
# reason on stderr. (--drain is left to tests/cluster/test_health.sh: no slurmctld here.)
#   tests/gpu/health.sh                 (after: source tests/gpu/env.sh)
set -uo pipefail
BIN=${GPUACCEPT_BIN:-$(cd "$(dirname "$0")/../.." && pwd)/build/bin}
ngpu=$(nvidia-smi -L | grep -c '^GPU')
echo "=== gpuaccept-health (expect $ngpu GPUs)"
start=$(date +%s%N)
"$BIN/gpuaccept-health" --expect-gpus "$ngpu"
rc=$?
echo "exit code $rc, $(( ($(date +%s%N) - start) / 1000000 )) ms wall (process start to exit)"
echo "=== gpuaccept-health --expect-gpus $((ngpu + 1)) (must FAIL)"
"$BIN/gpuaccept-health" --expect-gpus $((ngpu + 1))
bad=$?
echo "exit code $bad"
[ "$rc" -eq 0 ] && [ "$bad" -eq 1 ]
