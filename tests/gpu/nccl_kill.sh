#!/bin/bash
# A rank dies (SIGKILL) or hangs in the middle of the sweep: the phase must end on its own
# within --timeout plus the bounded final gather, exit non-zero, record one FAIL naming
# the rank that did not arrive (dead or stuck), and keep every figure measured before.
# Setup: tests/gpu/nccl_common.sh.   tests/gpu/nccl_kill.sh [kill|hang]
#   KILL_RANK [1] (not 0: rank 0 writes the results file), KILL_AFTER steps [20],
#   TIMEOUT seconds [30].
# shellcheck source=tests/gpu/nccl_common.sh
source "$(dirname "$0")/nccl_common.sh"
need
mode=${1:-kill}
rank=${KILL_RANK:-1}
after=${KILL_AFTER:-20}
timeout_s=${TIMEOUT:-30}
[ "$rank" -ne 0 ] || die "KILL_RANK=0: rank 0 writes the results file; pick another"
[ "$rank" -lt "$NRANKS" ] || die "KILL_RANK=$rank but $NRANKS ranks"
case $mode in
  kill) inject=(--debug-kill-rank "$rank" --debug-kill-after-steps "$after") ;;
  hang) inject=(--debug-hang-rank "$rank" --debug-kill-after-steps "$after") ;;
  *) die "mode $mode: want kill or hang" ;;
esac
run=nccl-$mode-$(date +%Y%m%dT%H%M%S)
log=$RESULTS/$run.log
# Bound: start-up and the steps before the fault (< 60 s at these sizes), the timeout, the
# abort notice and a hung rank's last resort (~15 s), the final gather's PMIx timeout (30 s).
limit=$((60 + timeout_s + 15 + 30 + 30))
start=$(date +%s)
launch_argv "$NRANKS"
set +e
timeout --kill-after=10 $((limit + 60)) "${LAUNCH[@]}" "$BIN/gpuaccept-nccl-scaling" --results "$RESULTS" \
  --run-id "$run" -b 8 -e 64M -f 2 --collectives all_reduce --dtypes float --scales intra_node \
  --timeout "$timeout_s" "${inject[@]}" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
elapsed=$(($(date +%s) - start))
echo "exit code $rc after $elapsed s (limit $limit s)"
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then die "the step hung until timeout(1) killed it"; fi
[ "$rc" -ne 0 ] || die "exit code 0 although rank $rank was ${mode}ed"
[ "$elapsed" -le "$limit" ] || die "took $elapsed s, more than $limit s"
file=$RESULTS/$run/nccl-scaling.h5
[ -f "$file" ] || die "no results file $file: rank 0 did not write it"
if [ -x "$RESULTS_CHECK" ]; then
  state=$([ "$mode" = kill ] && echo "dead?" || echo "alive, stuck")
  "$RESULTS_CHECK" "$file" --phase nccl-scaling \
    --record-status all_reduce=PASS \
    --record-status all_reduce=FAIL \
    --message-contains "all_reduce=did not finish within $timeout_s s" \
    --message-contains "all_reduce=ranks that did not arrive: $rank (" \
    --message-contains "all_reduce=$state" || die "results check"
fi
grep -q "ranks that did not arrive: $rank (" "$log" || die "the log does not name rank $rank"
echo "nccl-scaling $mode test: ok ($elapsed s)"
