#!/bin/bash
# nccl-scaling on one GPU machine, every GPU one rank, the full nccl-tests sweep
# (8 B .. 8 GiB, x2), then a look at the results file. Setup: tests/gpu/nccl_common.sh.
#   tests/gpu/nccl_local.sh [extra phase flags, e.g. --profile full --collectives all_reduce]
# The job log has nccl-tests-like tables ("# Avg bus bandwidth") per collective and dtype;
# <results>/<run>/nccl-scaling.h5 has the records.
# shellcheck source=tests/gpu/nccl_common.sh
source "$(dirname "$0")/nccl_common.sh"
need
run=${RUN_ID:-nccl-local-$(date +%Y%m%dT%H%M%S)}
log=$RESULTS/$run.log
set +e
launch "$NRANKS" "$BIN/gpuaccept-nccl-scaling" --results "$RESULTS" --run-id "$run" -b 8 -e 8G -f 2 "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
file=$RESULTS/$run/nccl-scaling.h5
[ -f "$file" ] || die "no results file $file (exit code $rc)"
if [ -x "$RESULTS_CHECK" ]; then
  "$RESULTS_CHECK" "$file" --phase nccl-scaling --complete yes --document nccl_env \
    --record-status all_reduce=PASS --record-status pair_busbw=PASS || die "results check"
fi
grep -q "# Avg bus bandwidth" "$log" || die "no nccl-tests table in the log"
[ ! -d "$RESULTS/$run/nccl-scaling.arrivals" ] || die "arrival board left behind after a clean run"
echo "nccl-scaling: exit code $rc, log $log, results $file"
exit "$rc"
