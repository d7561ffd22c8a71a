#!/bin/bash
# A rank dies in the middle of smoke (SIGKILL, as when a node's OOM killer or a crash takes
# it), the phase run as an operator runs it (sbatch/smoke.sbatch). Slurm's mpi/pmix plugin
# then kills the whole step (see sbatch/common.sh), so no rank is left to gather; the batch
# script must still leave smoke.h5, assembled from the ranks' checkpoints, with the failure
# recorded and what was measured before it kept.
set -euo pipefail
root="$GPUACCEPT_RESULTS/rank-death-$$"
mkdir -p "$root/logs"
victim=3  # local rank 1 on the second node: not rank 0
cfg="$root/smoke.yaml"
# A long filesystem stream on each node's local rank 0 keeps the phase busy for seconds.
printf 'smoke:\n  require_exclusive_cpus: false\n  fs_stream_bytes: 2147483648\n' >"$cfg"
job=$(sbatch --parsable -N2 --time=00:10:00 --output="$root/logs/smoke-%j.out" \
  --export=ALL,GPUACCEPT_HOME="$GPUACCEPT_SOURCE",GPUACCEPT_BIN="$GPUACCEPT_BIN",GPUACCEPT_RESULTS="$root",GPUACCEPT_CONFIG="$cfg",GPUACCEPT_GPUS_PER_NODE=0,GPUACCEPT_TASKS_PER_NODE=2,GPUACCEPT_PMIX_TIMEOUT=20 \
  "$GPUACCEPT_SOURCE/sbatch/smoke.sbatch")
job=${job%%;*}
log="$root/logs/smoke-$job.out"
echo "smoke job $job, log $log"

# Once the binding step has ended (the shared_fs step has begun), kill the victim.
for _ in $(seq 1200); do grep -qs "step 2/.* binding" "$log" && break; sleep 0.1; done
grep -qs "step 2/.* binding" "$log" || { cat "$log" || true; echo "smoke never reached its shared_fs step"; exit 1; }
sleep 0.5
pid=""
for p in /proc/[0-9]*; do
  [[ $(readlink "$p/exe" 2>/dev/null) == */gpuaccept-smoke ]] || continue
  tr '\0' '\n' <"$p/environ" 2>/dev/null | grep -qx "SLURM_PROCID=$victim" && pid=${p#/proc/}
done
[[ -n $pid ]] || { cat "$log"; echo "rank $victim not found"; exit 1; }
kill -9 "$pid"
echo "killed rank $victim (pid $pid)"

for _ in $(seq 240); do squeue -h -j "$job" 2>/dev/null | grep -q . || break; sleep 0.5; done
cat "$log"
if squeue -h -j "$job" 2>/dev/null | grep -q .; then scancel "$job"; echo "the job did not end within 2 minutes"; exit 1; fi
file="$root/$job/smoke.h5"
[[ -f $file ]] || { echo "no results file $file"; ls -la "$root/$job" || true; exit 1; }
grep -q "assembled from the ranks' checkpoints" "$log" || { echo "the log does not say the file was salvaged"; exit 1; }
# The failure is recorded; the Slurm checks every rank checkpointed before the kill are kept.
"$RESULTS_CHECK" "$file" --complete partial --record-status result_gather=ERROR \
  --message-contains "result_gather=srun exited with code" --record-status slurm_controller=PASS
"$RESULTS_CHECK" "$file" --ranks 4 >/dev/null || { "$RESULTS_CHECK" "$file" --ranks 4; echo "not every rank's checkpoint is in the file"; exit 1; }
rm -rf "$root"
echo "rank death: ok"
