#!/bin/bash
# A rank dies (SIGKILL) or hangs in the middle of the sweep: the phase must end on its own
# within --timeout plus the bounded final gather, exit non-zero, record one FAIL naming
# the rank that did not arrive (dead or stuck), and keep every figure measured before.
# Under srun --mpi=pmix a rank killed by a signal takes the whole step down (Slurm's
# mpi/pmix plugin; see sbatch/common.sh), so no rank is left to write the file: it is then
# salvaged from the ranks' checkpoints as sbatch/common.sh does, and must hold the figures
# measured before and an ERROR saying how the step ended.
# Setup: tests/gpu/nccl_common.sh.   tests/gpu/nccl_kill.sh [kill|hang]
#   KILL_RANK [1] (not 0: rank 0 writes the results file), KILL_AFTER steps [20],
#   TIMEOUT seconds [30].
# shellcheck source=tests/gpu/nccl_common.sh
source "$(dirname "$0")/nccl_common.sh"
need
fault_setup nccl "${1:-kill}" 20
# Bound: start-up and the steps before the fault (< 60 s at these sizes), the timeout, the
# abort notice and a hung rank's last resort (~15 s), the final gather's PMIx timeout (30 s).
run_with_fault $((60 + timeout_s + 15 + 30 + 30)) "$BIN/gpuaccept-nccl-scaling" --results "$RESULTS" \
  --run-id "$run" -b 8 -e 64M -f 2 --collectives all_reduce --dtypes float --scales intra_node \
  --checkpoint-interval 0 --timeout "$timeout_s"
file=$RESULTS/$run/nccl-scaling.h5
expect_salvaged nccl-scaling "$file" all_reduce
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
