#!/bin/bash
# Fault matrix (docs/reliability.md): an operator cancels a job.
#   test_fault_cancel.sh mid-phase   scancel while smoke runs (sbatch/smoke.sbatch): Slurm sends
#                                    SIGTERM to the batch script and the step, SIGKILL KillWait
#                                    later. The batch script's trap (sbatch/common.sh) lets srun
#                                    end, then assembles smoke.h5 from the ranks' checkpoints with
#                                    an ERROR saying the job was cancelled; the report is FAIL.
#   test_fault_cancel.sh next-index  scancel the pipeline's array once its first phases ended and
#                                    the next is about to run: the phases that ran keep their
#                                    files, the report job (afterany) still runs and names every
#                                    phase that never ran; verdict FAIL, never PASS.
set -euo pipefail
# shellcheck source=tests/cluster/fault_lib.sh
source "$(dirname "$0")/fault_lib.sh"
mode=${1:?mid-phase or next-index}
root="$GPUACCEPT_RESULTS/fault-cancel-$mode-$$"
t0=$SECONDS

case $mode in
mid-phase)
  submit_smoke "$root" "$root" GPUACCEPT_PMIX_TIMEOUT=20 -N2
  scancel "$job"
  echo "cancelled job $job at $((SECONDS - t0)) s"
  wait_job_gone "$job" 60 || { cat "$log"; echo "the job did not end within 60 s of scancel"; exit 1; }
  echo "job ended at $((SECONDS - t0)) s"
  cat "$log"
  salvaged_smoke "$root/$job/smoke.h5" "SIGTERM (the job was cancelled"
  report_fails "$root/$job"
  ;;
next-index)
  # discover, then smoke, then nccl-scaling and ddp never run: cancelled once smoke has ended.
  out=$(make -s -f "$GPUACCEPT_SOURCE/Makefile.slurm" submit NODES=2 GPUS_PER_NODE=0 TASKS_PER_NODE=2 \
    PROFILE=local RESULTS="$root" BUILD="$(dirname "$GPUACCEPT_BIN")" TIME=00:10:00 \
    PHASES="discover smoke nccl-scaling ddp")
  echo "$out"
  array=$(sed -n 's/^pipeline array job: *\([0-9]*\).*/\1/p' <<<"$out")
  report=$(sed -n 's/^report job: *\([0-9]*\).*/\1/p' <<<"$out")
  [[ -n $array && -n $report ]] || { echo "no job ids printed"; exit 1; }
  wait_for_log "$root/logs/gpuaccept-${array}_1.out" "phase smoke ended" 240 ||
    { cat "$root"/logs/* || true; scancel "$array" "$report"; echo "smoke never ended"; exit 1; }
  scancel "$array"
  echo "cancelled array $array after smoke, at $((SECONDS - t0)) s"
  wait_job_gone "$report" 120 || { scancel "$report"; echo "the report job did not run within 120 s of the cancel"; exit 1; }
  cat "$root/logs/gpuaccept-report-$report.out"
  run="$root/$array"
  for f in discover.h5 smoke.h5 report.html summary.json junit.xml; do
    [[ -s $run/$f ]] || { ls -la "$run"; echo "$f missing after the cancel"; exit 1; }
  done
  "$RESULTS_CHECK" "$run/smoke.h5" --record-status slurm_controller=PASS --no-status ERROR
  summary_py "$run" '
status = {p["phase"]: p["status"] for p in s["phases"]}
assert s["verdict"] == "FAIL", s["verdict"]
assert status.get("discover") in ("PASS", "SKIP") and status.get("smoke") == "PASS", status
text = json.dumps(s)
for p in ("nccl-scaling", "ddp"):
    assert f"expected phase {p} did not report" in text, p
'
  ;;
*) echo "usage: $0 mid-phase|next-index" >&2; exit 2 ;;
esac
rm -rf "$root"
echo "cancel $mode: ok"
