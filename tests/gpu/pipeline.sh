#!/bin/bash
# The acceptance pipeline on the GPU machine as an operator runs it: `make -f Makefile.slurm
# acceptance` against the local Slurm (tests/gpu/local_slurm.sh: one node whose GRES are this
# machine's GPUs), one rank per GPU with Slurm binding them (--gpus-per-node on the job,
# --gpus-per-task=1 on every step), each rank bound to (CPUs / GPUs) CPUs, then the report
# job. Per profile it prints the wall time from submission to the report, each phase's status
# and the report's verdict.
#   tests/gpu/pipeline.sh [quick] [full]        (default: quick; in one device call, carry .gpu-carry)
# Expected: on a healthy one-GPU machine INCOMPLETE (the phases that need two GPUs or two
# nodes SKIP, saying so), never FAIL; on a multi-GPU machine PASS, with the node in
# good-nodes.txt. Exit status 1 when the verdict is FAIL or ERROR, a PASS hands back no node,
# or Slurm does not schedule the GPUs.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
source tests/gpu/env.sh
# As a real GPU cluster should be set up: each rank bound to its own share of the node's CPUs
# (TaskPlugin=task/affinity, --cpus-per-task), which smoke's binding_cpu_exclusive checks. The
# other scripts of tests/gpu leave the ranks unbound (task/none), their figures being the GPU's.
export GPUACCEPT_CLUSTER_TASK_PLUGIN=task/affinity
source tests/gpu/local_slurm.sh || exit 1  # ngpu, the cluster's exports, bind
cpus_per_task=$(($(nproc) / ngpu))
profiles=("$@")
[ ${#profiles[@]} -gt 0 ] || profiles=(quick)
if [ "${bind[0]}" != --gpus-per-task=1 ]; then
  echo "pipeline: Slurm does not schedule this machine's GPUs as GRES; the pipeline's steps could not bind them" >&2
  exit 1
fi
scontrol show node | grep -o -E 'NodeName=[^ ]+|Gres=[^ ]+|CfgTRES=[^ ]+'
status=0
for profile in "${profiles[@]}"; do
  results=$OUT/pipeline-$profile
  echo "=== pipeline, profile $profile, 1 node x $ngpu GPUs, results $results"
  t0=$SECONDS
  make -s -f Makefile.slurm acceptance NODES=1 GPUS_PER_NODE="$ngpu" CPUS_PER_TASK="$cpus_per_task" PROFILE="$profile" \
    RESULTS="$results" BUILD="$PWD/.gpu-carry" WAIT=1 2>&1 | tee "$OUT/pipeline-$profile.log"
  wall=$((SECONDS - t0))
  run_dir=$(find "$results" -mindepth 1 -maxdepth 1 -type d ! -name logs | sort | tail -n 1)
  summary=$run_dir/summary.json
  if [ ! -s "$summary" ]; then
    echo "pipeline $profile: no summary.json under $results after ${wall}s; job logs:" >&2
    tail -n 20 "$results"/logs/*.out >&2
    status=1
    continue
  fi
  python3 - "$summary" "$profile" "$wall" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
print(f"pipeline {sys.argv[2]}: wall {float(sys.argv[3]):.0f} s (submission to report), verdict {s['verdict']}")
for p in s["phases"]:
    checks = " ".join(f"{k}={v}" for k, v in p["checks"].items())
    print(f"  {p['phase']:<13} {p['status']:<6} checks: {checks}")
for f in s.get("failures", [])[:20]:
    # failures holds warnings too (a WARN rule leaves the verdict PASS): each says which
    print(f"  {f.get('outcome', f.get('status', 'FAIL'))}: {f.get('phase', '')} {f.get('test', f.get('rule', ''))}: "
          f"{f.get('message', '')[:200]}")
for reason in s.get("incomplete_reasons", []):
    print(f"  INCOMPLETE: {reason}")
g = s.get("good_nodes", {})
held = "; ".join(f"{h['node']}: {h['why']}" for h in g.get("held_back", [])[:4])
print(f"  good nodes (good-nodes.txt): {g.get('hostlist') or 'none'}" + (f"; held back: {held}" if held else ""))
print(f"  one node set: {s.get('node_coverage', {}).get('same_nodes')}")
EOF
  # A PASS without warnings speaks for every node of the run: each must be handed back
  # (model/good_nodes.h; a node with a warning is only watched, and held back).
  if [ "$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["verdict"], len(s["nodes_to_watch"]["nodes"]))' "$summary")" = "PASS 0" ] &&
     [ ! -s "$run_dir/good-nodes.txt" ]; then
    echo "pipeline $profile: PASS without a node to watch, yet good-nodes.txt is empty" >&2
    status=1
  fi
  # What an operator would have to learn to ignore: job log lines that are neither the
  # phases' own ("[phase rN/M host] ...", "gpuaccept: ...") nor the report's.
  noise=$(grep -h -v -E '^\[|^gpuaccept' "$results"/logs/*.out | sort | uniq -c | sort -rn | head -n 10)
  if [ -n "$noise" ]; then
    printf 'pipeline %s: job log lines from outside gpuaccept:\n%s\n' "$profile" "$noise"
  else
    echo "pipeline $profile: job logs hold only gpuaccept's own lines"
  fi
  mkdir -p "$OUT/report-$profile"
  cp "$run_dir"/report.html "$run_dir"/summary.json "$run_dir"/junit.xml "$OUT/report-$profile/" 2>/dev/null
  case $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["verdict"])' "$summary") in
    FAIL | ERROR) status=1 ;;
  esac
done
tests/cluster/down >/dev/null 2>&1 || true
# Few files come back from a device call: the results, job logs and daemons' logs as one archive.
cp "$GPUACCEPT_CLUSTER_DIR"/log/*.log "$OUT/" 2>/dev/null
(cd "$OUT" && tar --exclude=checkpoints -czf pipeline-results.tar.gz pipeline-* report-* ./*.log --remove-files 2>/dev/null)
exit $status
