#!/bin/bash
# A rank dies in the middle of smoke (SIGKILL, as when a node's OOM killer or a crash takes
# it), the phase run as an operator runs it (sbatch/smoke.sbatch). Slurm 22.05's mpi/pmix plugin
# then kills the whole step (see sbatch/common.sh), so no rank is left to gather; the batch
# script must still leave smoke.h5, assembled from the ranks' checkpoints, with the failure
# recorded and what was measured before it kept. 24.11's leaves the survivors running: rank 0
# writes the file, the dead rank named in its result_gather ERROR.
set -euo pipefail
# shellcheck source=tests/cluster/fault_lib.sh
source "$(dirname "$0")/fault_lib.sh"
root="$GPUACCEPT_RESULTS/rank-death-$$"
victim=3  # local rank 1 on the second node: not rank 0
# Once the binding step has ended (the shared_fs step has begun), kill the victim.
submit_smoke "$root" "$root" GPUACCEPT_PMIX_TIMEOUT=20 -N2
pid=$(rank_pid smoke "$victim" "$job") || { cat "$log"; echo "rank $victim not found"; exit 1; }
kill -9 "$pid"
echo "killed rank $victim (pid $pid)"

for _ in $(seq 240); do squeue -h -j "$job" 2>/dev/null | grep -q . || break; sleep 0.5; done
cat "$log"
if squeue -h -j "$job" 2>/dev/null | grep -q .; then scancel "$job"; echo "the job did not end within 2 minutes"; exit 1; fi
# The failure is recorded; the Slurm checks every rank checkpointed before the kill are kept.
salvaged_smoke "$root/$job/smoke.h5" "srun exited with code" "of rank $victim"
rm -rf "$root"
echo "rank death: ok"
