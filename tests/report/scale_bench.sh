#!/bin/bash
# The report at scale (issue 18): a synthetic run of NODES x GPUS ranks (make_scale_run.cpp:
# every phase, the record counts the real phases write) through the real gpuaccept-report,
# with its wall time, peak memory (GNU time's maximum resident set size: the report process;
# each results file is read in a child of its own, smaller) and the sizes of what it wrote.
#   tests/report/scale_bench.sh [NODES] [GPUS] [BUILD]     (default 1024 8 build)
# Goal (docs/performance.md): 8,192 ranks in <= 30 s and <= 2 GB on one core.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
nodes=${1:-1024}
gpus=${2:-8}
build=${3:-$root/build}
dir=$(mktemp -d -p /var/tmp gpuaccept-scale.XXXXXX)
trap 'rm -rf "$dir"' EXIT
"$build/bin/gpuaccept-scale-run" "$dir/run" --nodes "$nodes" --gpus "$gpus"
du -sh "$dir/run"
export GPUACCEPT_THRESHOLDS_DIR=${GPUACCEPT_THRESHOLDS_DIR:-$root/configs/thresholds}
set +e
taskset -c 0 /usr/bin/time -f "report: %e s wall, %M KB peak resident" \
  "$build/bin/gpuaccept-report" "$dir/run" --no-history 2>&1 | grep -v "^\[report .*\] thresholds"
set -e
stat -c "%s bytes %n" "$dir/run"/report.html "$dir/run"/summary.json "$dir/run"/junit.xml
