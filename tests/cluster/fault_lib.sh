# shellcheck shell=bash
# Helpers for the fault-matrix tests (tests/cluster/test_fault_*.sh, test_rank_death.sh). Sourced.

# wait_for_log LOG PATTERN SECONDS: until PATTERN appears in LOG.
wait_for_log() {
  local i
  for ((i = 0; i < $3 * 10; i++)); do grep -qs -- "$2" "$1" && return 0; sleep 0.1; done
  return 1
}

# rank_pid BINARY RANK [JOB]: the pid of that rank of gpuaccept-BINARY (of job JOB if given).
# grep -z reads the NUL-separated environment itself: `tr | grep -q` under pipefail failed at
# random when grep, done early, left tr to die of SIGPIPE ("rank 3 not found").
rank_pid() {
  local p
  for p in /proc/[0-9]*; do
    [[ $(readlink "$p/exe" 2>/dev/null) == */gpuaccept-$1 ]] || continue
    grep -qxz "SLURM_PROCID=$2" "$p/environ" 2>/dev/null || continue
    if [[ -n ${3:-} ]]; then grep -qxz "SLURM_JOB_ID=$3" "$p/environ" 2>/dev/null || continue; fi
    echo "${p#/proc/}"
    return 0
  done
  return 1
}

# wait_job_gone JOB SECONDS: until squeue no longer lists JOB (or any of its array tasks).
wait_job_gone() {
  local i
  for ((i = 0; i < $2 * 2; i++)); do squeue -h -j "$1" 2>/dev/null | grep -q . || return 0; sleep 0.5; done
  return 1
}

# slurmd_pid NODE: the slurmd of that node (its pid file, tests/cluster/lib.sh).
slurmd_pid() { cat "$GPUACCEPT_CLUSTER_DIR/run/slurmd-$1.pid"; }

# summary_py RUN_DIR CODE: Python code over summary.json as `s` (json imported).
summary_py() { python3 -c "import json,sys; s=json.load(open(sys.argv[1])); $2" "$1/summary.json"; }

# node_pids NODE: every process in that node's network namespace (its slurmd, slurmstepds and
# tasks): what a node that crashes or loses power takes with it.
node_pids() {
  local ns p
  ns=$(readlink "/proc/$(slurmd_pid "$1")/ns/net")
  for p in /proc/[0-9]*; do
    [[ $(readlink "$p/ns/net" 2>/dev/null) == "$ns" ]] && echo "${p#/proc/}"
  done
  return 0
}

# restart_cluster: the local cluster from its own configuration, as tests/cluster/up makes it
# (after a test that took a node down).
restart_cluster() {
  "$GPUACCEPT_SOURCE/tests/cluster/down" >/dev/null 2>&1 || true
  "$GPUACCEPT_SOURCE/tests/cluster/up" >/dev/null 2>&1 || echo "the cluster did not come back up" >&2
}

# submit_smoke DIR RESULTS EXPORTS SBATCH_ARGS...: smoke through sbatch/smoke.sbatch as an
# operator runs it, 2 ranks per node, with a 2 GiB filesystem stream on each node's first rank
# (seconds of work after the binding step, to put a fault into; SMOKE_FS_DIR: where it goes).
# Its config and log go under DIR, its results under RESULTS; EXPORTS: more NAME=VALUE,... for
# the job. Sets `job` and `log`, and returns once the binding step has ended.
submit_smoke() {
  local dir=$1 results=$2 exports=$3
  shift 3
  local cfg=$dir/smoke.yaml
  mkdir -p "$dir/logs"
  printf 'smoke:\n  require_exclusive_cpus: false\n  fs_stream_bytes: 2147483648\n' >"$cfg"
  if [[ -n ${SMOKE_FS_DIR:-} ]]; then printf '  fs_dir: %s\n' "$SMOKE_FS_DIR" >>"$cfg"; fi
  job=$(sbatch --parsable "$@" --time=00:05:00 --output="$dir/logs/smoke-%j.out" \
    --export=ALL,GPUACCEPT_HOME="$GPUACCEPT_SOURCE",GPUACCEPT_BIN="$GPUACCEPT_BIN",GPUACCEPT_RESULTS="$results",GPUACCEPT_CONFIG="$cfg",GPUACCEPT_GPUS_PER_NODE=0,GPUACCEPT_TASKS_PER_NODE=2${exports:+,$exports} \
    "$GPUACCEPT_SOURCE/sbatch/smoke.sbatch")
  job=${job%%;*}
  log=$dir/logs/smoke-$job.out
  echo "smoke job $job, log $log"
  wait_for_log "$log" "step 2/.* binding" 120 || { cat "$log" || true; echo "smoke never reached its shared_fs step"; exit 1; }
  sleep 0.5
}

# report_fails RUN_DIR [OUT_DIR]: the report on a run whose smoke met a fault must be written,
# exit 1 and say FAIL (never PASS, never a crash). Writes OUT_DIR (default RUN_DIR).
report_fails() {
  local run=$1 out=${2:-$1} rc=0
  "$GPUACCEPT_BIN/gpuaccept-report" "$run" --no-history --out "$out" --expect-phases smoke >"$out/report.out" 2>&1 || rc=$?
  cat "$out/report.out"
  [[ $rc == 1 ]] || { echo "report exit code $rc, expected 1 (FAIL)"; exit 1; }
  summary_py "$out" 'assert s["verdict"] == "FAIL", s["verdict"]'
}

# salvaged_smoke FILE TEXT [SURVIVORS_TEXT]: after a step Slurm ended, the batch script (its
# log: `log`) must have assembled FILE (a smoke.h5) from the 4 ranks' checkpoints:
# `complete=partial`, a `result_gather` ERROR that mentions TEXT, and the Slurm checks every rank
# measured before kept. Where Slurm left the survivors running instead (mpi/pmix of Slurm 24.11
# after a rank's death), rank 0 wrote FILE itself from the same checkpoints: the same checks,
# its `result_gather` ERROR mentioning SURVIVORS_TEXT (given: else that path FAILs).
salvaged_smoke() {
  local file=$1 text=$2 survivors_text=${3:-}
  [[ -f $file ]] || { echo "no results file $file"; ls -la "$(dirname "$file")" || true; exit 1; }
  if ! grep -q "assembled from the ranks' checkpoints" "$log"; then
    if [[ -n $survivors_text ]] && grep -q "the step wrote it; nothing to salvage" "$log"; then
      text=$survivors_text
    else
      echo "the log does not say the file was salvaged"; exit 1
    fi
  fi
  "$RESULTS_CHECK" "$file" --complete partial --record-status result_gather=ERROR \
    --message-contains "result_gather=$text" --record-status slurm_controller=PASS
  "$RESULTS_CHECK" "$file" --ranks 4 >/dev/null || { "$RESULTS_CHECK" "$file" --ranks 4; echo "not every rank's checkpoint is in the file"; exit 1; }
}
