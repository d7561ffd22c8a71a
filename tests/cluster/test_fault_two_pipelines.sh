#!/bin/bash
# Fault matrix (docs/reliability.md): two acceptance pipelines write into one results root at
# the same time (two operators, or a re-run submitted before the first ended), one node each,
# so both run at once. Each run keeps a directory of its own (the array job's id), its own
# logs and files; both reports are written and history.jsonl gets both rows, whole (it is
# rewritten under a lock).
set -euo pipefail
# shellcheck source=tests/cluster/fault_lib.sh
source "$(dirname "$0")/fault_lib.sh"
root="$GPUACCEPT_RESULTS/fault-two-pipelines-$$"
mkdir -p "$root"
submit() {
  make -s -f "$GPUACCEPT_SOURCE/Makefile.slurm" submit NODES=1 GPUS_PER_NODE=0 TASKS_PER_NODE=2 \
    PROFILE=local RESULTS="$root" BUILD="$(dirname "$GPUACCEPT_BIN")" TIME=00:10:00 PHASES="discover smoke"
}
out_a=$(submit)
out_b=$(submit)
echo "$out_a"
echo "$out_b"
ids() { sed -n "s/^$1 job: *\([0-9]*\).*/\1/p" <<<"$2"; }
array_a=$(ids "pipeline array" "$out_a") report_a=$(ids report "$out_a")
array_b=$(ids "pipeline array" "$out_b") report_b=$(ids report "$out_b")
[[ -n $array_a && -n $array_b && $array_a != "$array_b" ]] || { echo "two distinct array jobs expected"; exit 1; }
# Both pipelines hold a node at once at some point (one node each, two nodes).
both=0
for _ in $(seq 240); do
  running=$(squeue -h -t RUNNING -o '%F' | sort -u | grep -cx -e "$array_a" -e "$array_b" || true)
  [[ $running == 2 ]] && both=1
  squeue -h -j "$report_a,$report_b" 2>/dev/null | grep -q . || break
  sleep 0.5
done
squeue -h -j "$report_a,$report_b" 2>/dev/null | grep -q . && { scancel "$array_a" "$array_b" "$report_a" "$report_b"; echo "the pipelines did not end within 2 minutes"; exit 1; }
[[ $both == 1 ]] || echo "note: the two pipelines never ran at the same moment (the cluster was busy)"
for a in "$array_a" "$array_b"; do
  for f in discover.h5 smoke.h5 report.html summary.json junit.xml; do
    [[ -s $root/$a/$f ]] || { ls -la "$root/$a" || true; echo "$a: $f missing"; exit 1; }
  done
  "$RESULTS_CHECK" "$root/$a/smoke.h5" --complete yes --no-status ERROR --no-status FAIL
  summary_py "$root/$a" 'assert s["verdict"] == "INCOMPLETE", s["verdict"]'
done
python3 - "$root/history.jsonl" "$array_a" "$array_b" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
runs = sorted(r["run"] for r in rows)
assert runs == sorted(sys.argv[2:]), f"history rows for {runs}, expected {sys.argv[2:]}"
PY
rm -rf "$root"
echo "two pipelines in one results root: ok"
