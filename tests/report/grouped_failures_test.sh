#!/bin/bash
# Issue 39: "What failed" groups identical failures. A synthetic run (make_scale_run.cpp) of
# NODES x 8 GPUs where every GPU fails the same binding check, each message naming its own rank,
# node and GPU: the section has one row for all of them, with the count and where (a hostlist,
# the GPUs), beside the run's few other failures; summary.json keeps every failure and adds the
# groups; the phase's table still holds every record.
# Usage: grouped_failures_test.sh REPORT_BIN SCALE_RUN_BIN WORK_DIR [NODES]   (default 128)
set -euo pipefail
report=$1 scale_run=$2 work=$3 nodes=${4:-128}
fail() { echo "FAIL (grouped failures): $*" >&2; exit 1; }
rm -rf "$work"
mkdir -p "$work"
"$scale_run" "$work/run" --nodes "$nodes" --gpus 8 --every-gpu-fails 1 >/dev/null
set +e
"$report" "$work/run" --no-history >"$work/out.txt" 2>&1
rc=$?
set -e
[[ $rc == 1 ]] || { cat "$work/out.txt"; fail "report exit code $rc, expected 1"; }
last=$(printf 'gpu%04d' "$nodes")
python3 - "$work/run/summary.json" "$work/run/report.html" "$nodes" "$last" <<'PY'
import json, re, sys
s = json.load(open(sys.argv[1]))
html = open(sys.argv[2], encoding="utf-8").read()
nodes, last = int(sys.argv[3]), sys.argv[4]
def need(cond, what):
    if not cond:
        print("FAIL (grouped failures):", what, file=sys.stderr)
        sys.exit(1)
groups = s["failure_groups"]
binding = [g for g in groups if g["check"] == "binding_gpu_count gpus"]
need(len(binding) == 1, f"the binding failures are {len(binding)} groups, expected 1: {binding}")
b = binding[0]
need(b["count"] == nodes * 8, f"the group counts {b['count']}, expected {nodes * 8}")
need(b["where"] == f"gpu[0001-{last[3:]}] GPUs 0-7", f"where: {b['where']}")
need(b["pattern"].startswith("rank # on <node> sees # GPUs"), f"pattern: {b['pattern']}")
# The run's other failures: the slow GPU below its fleet at each GEMM dtype (FAIL from 8192^3,
# WARN below), an ECC error, a slow checkpoint write per training phase: 12 rows in all.
need(len(groups) == 12, f"{len(groups)} groups, expected 12: {[(g['check'], g['count']) for g in groups]}")
need(groups[0] is b, "the most frequent failure of the most severe level does not come first")
need(sum(g["count"] for g in groups) == len(s["failures"]), "the groups do not add up to every failure")
need(sum(1 for f in s["failures"] if f.get("test") == "binding_gpu_count") == nodes * 8,
     "summary.json's failures do not keep every record")
section = html[html.index('<section id="failures">'):html.index("</section>", html.index('<section id="failures">'))]
rows = section.count("<tr><td>")
need(rows == len(groups), f"What failed has {rows} rows, expected one per group ({len(groups)})")
need(f'{nodes * 8} &#215;</span> gpu[0001-{last[3:]}] GPUs 0-7 <a class="all-of" href="#phase-smoke">all</a>' in section,
     "the group's count, hostlist and link to the phase's table are not shown")
need('<section id="phase-smoke"' in html, "the phase's table is gone")
# The first screen: the header, the verdict, then What failed (the phases after it).
order = [html.index(f'<section id="{x}"') for x in ("verdict", "failures", "phases")]
need(order == sorted(order), "What failed does not follow the verdict at once")
print(f"PASS (grouped failures): {len(s['failures'])} failures in {len(groups)} rows")
PY
