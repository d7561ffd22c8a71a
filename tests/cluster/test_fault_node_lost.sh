#!/bin/bash
# Fault matrix (docs/reliability.md): a node is lost in the middle of smoke. Every process of
# gpa-node2 (its slurmd, the step's slurmstepd and ranks 2 and 3) is SIGKILLed at once, as a
# kernel panic or a power loss would end them. The ranks on gpa-node1 give up in their next
# PMIx fence (GPUACCEPT_PMIX_TIMEOUT: Slurm's mpi/pmix alone would keep them there, see
# src/world/pmix_world.cpp), and rank 0 writes smoke.h5 from the ranks' checkpoints with ERRORs
# naming the lost ranks by their stopped heartbeats; what every rank measured before is kept;
# the report is FAIL and drains gpa-node2, not the survivors on gpa-node1.
# The cluster is restarted afterwards, gpa-node2 with it.
set -euo pipefail
# shellcheck source=tests/cluster/fault_lib.sh
source "$(dirname "$0")/fault_lib.sh"
root="$GPUACCEPT_RESULTS/fault-node-lost-$$"
trap restart_cluster EXIT
t0=$SECONDS
submit_smoke "$root" "$root" GPUACCEPT_PMIX_TIMEOUT=10,GPUACCEPT_STEP_WAIT=20,GPUACCEPT_HEARTBEAT=1 -N2
mapfile -t pids < <(node_pids gpa-node2)
(( ${#pids[@]} >= 3 )) || { echo "gpa-node2 has only ${#pids[@]} processes: not the slurmd, stepd and ranks"; exit 1; }
kill -9 "${pids[@]}" 2>/dev/null || true
echo "gpa-node2 lost at $((SECONDS - t0)) s: killed ${#pids[@]} processes"
# The job ends when the ranks on gpa-node1 gave up and the step and batch script ended; Slurm may
# keep the job COMPLETING until it hears from gpa-node2, so wait for the batch script's last line.
wait_for_log "$log" "phase smoke ended with exit code" 150 ||
  { cat "$log"; scancel "$job"; echo "the phase did not end within 150 s of the node loss"; exit 1; }
echo "the phase ended at $((SECONDS - t0)) s"
sleep 2  # salvage, if it runs, follows the line above
cat "$log"
file="$root/$job/smoke.h5"
[[ -f $file ]] || { echo "no results file $file"; ls -la "$root/$job" || true; exit 1; }
# What every rank measured before the loss is kept, and the lost node's ranks are named (their
# heartbeats stopped when the node went; the survivors' went on until they gave up).
"$RESULTS_CHECK" "$file" --complete partial --ranks 4 --record-status result_gather=ERROR \
  --record-status slurm_controller=PASS \
  --message-contains "result_gather=rank 2 (gpa-node2): its heartbeat stopped" \
  --message-contains "result_gather=rank 3 (gpa-node2): its heartbeat stopped"
report_fails "$root/$job"
# The lost node is the one to drain; the survivors only waited for it.
bad=$(cat "$root/$job/bad-nodes.txt")
[[ $bad == gpa-node2 ]] || { echo "bad-nodes.txt says '$bad', expected gpa-node2"; exit 1; }
rm -rf "$root"
echo "node lost: ok"
