#!/bin/bash
# Fault matrix (docs/reliability.md): a rank stopped with SIGSTOP in the middle of smoke, a
# hang (a rank that neither works nor dies). The other ranks wait in their next PMIx fence
# for GPUACCEPT_PMIX_TIMEOUT seconds, give up, and rank 0 writes smoke.h5 from the ranks'
# checkpoints with an ERROR naming the rank that did not report; srun's --wait
# (GPUACCEPT_STEP_WAIT, sbatch/common.sh) then ends the stopped task. The report on that run
# is FAIL with the reason.
set -euo pipefail
# shellcheck source=tests/cluster/fault_lib.sh
source "$(dirname "$0")/fault_lib.sh"
root="$GPUACCEPT_RESULTS/fault-hang-$$"
victim=3  # local rank 1 on the second node
t0=$SECONDS
submit_smoke "$root" "$root" GPUACCEPT_PMIX_TIMEOUT=6,GPUACCEPT_STEP_WAIT=12,GPUACCEPT_HEARTBEAT=1 -N2
pid=$(rank_pid smoke "$victim" "$job") || { cat "$log"; echo "rank $victim not found"; exit 1; }
kill -STOP "$pid"
echo "stopped rank $victim (pid $pid) at $((SECONDS - t0)) s"
wait_job_gone "$job" 90 || { cat "$log"; kill -CONT "$pid" || true; scancel "$job"; echo "the job did not end within 90 s of the hang"; exit 1; }
echo "job ended at $((SECONDS - t0)) s"
cat "$log"
file="$root/$job/smoke.h5"
[[ -f $file ]] || { echo "no results file $file"; ls -la "$root/$job" || true; exit 1; }
"$RESULTS_CHECK" "$file" --complete partial --record-status result_gather=ERROR \
  --message-contains "result_gather=rank $victim (gpa-node2): its heartbeat stopped" --record-status slurm_controller=PASS
"$RESULTS_CHECK" "$file" --ranks 4 >/dev/null || { "$RESULTS_CHECK" "$file" --ranks 4; echo "not every rank's checkpoint is in the file"; exit 1; }
report_fails "$root/$job"
rm -rf "$root"
echo "rank hang: ok"
