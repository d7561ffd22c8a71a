#!/bin/bash
# The report's judgement of the fabric between nodes (issue 37, docs/fabric.md), end to end on a
# run written by make_fabric_run.cpp, without GPUs.
# Usage: fabric_test.sh CASE REPORT_BIN FIXTURE_BIN WORK_DIR
#   broken:  NCCL over sockets between nodes with active RDMA ports, busbw below 0.8 x line rate,
#            gpa-node2's symbol_error rising: exit 1, named in report.html and summary.json, and
#            gpa-node2 (only) in bad-nodes.txt and drain.sh
#   healthy: every figure within its bound, one counter reset: exit 0, nothing to drain, the
#            reset node watched
set -euo pipefail
case_name=$1 report=$2 fixture=$3 work=$4
run=$work/run
rm -rf "$work"
mkdir -p "$work"

fail() { echo "FAIL ($case_name): $*" >&2; exit 1; }

# Runs the report; its exit code lands in $rc.
report_rc() {
  set +e
  "$report" "$run" --no-history >"$work/out.txt" 2>&1
  rc=$?
  set -e
  cat "$work/out.txt"
}

# A Python expression over the summary (`s`) and the HTML's Fabric section (`fabric`, as text).
check() {
  python3 - "$run/summary.json" "$run/report.html" "$1" <<'PY'
import json, re, sys
s = json.load(open(sys.argv[1]))
page = open(sys.argv[2], encoding="utf-8").read()
m = re.search(r'<section id="fabric">.*?</section>', page, re.S)
fabric = m.group(0) if m else ""
if not eval(sys.argv[3], {"s": s, "f": s["fabric"], "fabric": fabric}):
    print("check failed:", sys.argv[3], file=sys.stderr)
    sys.exit(1)
PY
}

case $case_name in
broken)
  "$fixture" "$run" >/dev/null
  report_rc
  [[ $rc == 1 ]] || fail "exit code $rc, expected 1"
  check 's["verdict"] == "FAIL"'
  # The transport: sockets between nodes that have active ports, on every multi-node scale.
  check '[t["status"] for t in f["transports"]] == ["FAIL", "FAIL"]'
  check 'all("gpa-node1" in t["params"]["hosts_socket"] for t in f["transports"])'
  check '"NET/Socket+P2P" in fabric and "gpa-node1,gpa-node2,&lt;b&gt;gpa-node3&lt;/b&gt;" in fabric'
  # The counters: gpa-node2's symbol_error rose during nccl-scaling, a FAIL in that phase.
  check 'f["counters"]["status"] == "FAIL" and len(f["counters"]["changes"]) == 1'
  check '{k: f["counters"]["changes"][0][k] for k in ("node", "port", "counter", "from", "to", "phase")} == {"node": "gpa-node2", "port": "mlx5_0/1", "counter": "symbol_error", "from": 3, "to": 17, "phase": "nccl-scaling"}'
  check 'any(c["test"] == "port_counters" and c["status"] == "FAIL" and c["node"] == "gpa-node2" and c["phase"] == "nccl-scaling" for c in s["checks"])'
  check '"symbol_error rose by 14 (3 -&gt; 17), first during nccl-scaling" in fabric'
  # busbw across nodes below 0.8 x line rate, the slowest pair named.
  check 'all(b["outcome"] == "FAIL" for b in f["inter_node_busbw"]) and len(f["inter_node_busbw"]) == 6'
  check '[(b["test"], b["scale"], b["bound"]) for b in f["inter_node_busbw"]][:2] == [("all_reduce", "inter_node", 40.0), ("all_reduce", "all", 80.0)]'
  check 'all(b["bytes"] == "1073741824" for b in f["inter_node_busbw"])'
  check 'any(v.get("rule") == "all_reduce_line_rate" and v["outcome"] == "FAIL" and "slowest node pair: gpa-node2 - <b>gpa-node3</b> 21.0 GB/s" in v["message"] for v in s["failures"])'
  check '"slowest node pair: gpa-node2 - &lt;b&gt;gpa-node3&lt;/b&gt; 21.0 GB/s" in fabric'
  check 'any(v.get("rule") == "all_reduce_latency_infiniband" and v["outcome"] == "FAIL" for v in s["failures"])'
  check 'any(v.get("rule") == "ddp_scaling_efficiency_multi_node" and v["outcome"] == "FAIL" for v in s["failures"])'
  # The node with the rising counters, and only it, is to be drained, with that reason.
  [[ $(cat "$run/bad-nodes.txt") == gpa-node2 ]] || fail "bad-nodes.txt holds '$(cat "$run/bad-nodes.txt")', not gpa-node2"
  check 's["nodes_to_drain"]["nodes"][0]["first_problem"].startswith("FAIL port_counters symbol_error mlx5_0/1: gpa-node2 mlx5_0/1 symbol_error rose by 14")'
  grep -q "^scontrol update NodeName='gpa-node2' State=DRAIN Reason='gpuaccept run: FAIL port_counters symbol_error mlx5_0/1: gpa-node2" "$run/drain.sh" ||
    fail "drain.sh does not drain gpa-node2 for its counters"
  [[ $(grep -c '^scontrol update' "$run/drain.sh") == 1 ]] || fail "drain.sh drains more than gpa-node2"
  sh -n "$run/drain.sh" || fail "drain.sh is not valid sh"
  # Hostnames and port names from the cluster arrive as text.
  check '"&lt;b&gt;gpa-node3&lt;/b&gt;" in fabric and "mlx5_&lt;i&gt;0&lt;/i&gt;/1" in fabric'
  ! grep -q '<b>gpa-node3\|<i>0</i>' "$run/report.html" || fail "raw markup from a hostname or port name in report.html"
  check '"400 Gb/sec (4X NDR)" in fabric and "possible: nvidia_peermem loaded" in fabric'
  ;;
healthy)
  "$fixture" "$run" --healthy >/dev/null
  report_rc
  [[ $rc == 0 ]] || fail "exit code $rc, expected 0"
  check 's["verdict"] == "PASS" and s["worst_level"] == "WARN"'
  check '[t["status"] for t in f["transports"]] == ["PASS", "PASS"]'
  check 'all(b["outcome"] == "PASS" for b in f["inter_node_busbw"]) and len(f["inter_node_busbw"]) == 6'
  check 'all(l["level"] == "PASS" for l in f["latency"]) and len(f["latency"]) == 4'
  # The reset is a note, not a FAIL: gpa-node1 is watched, nobody drained.
  check 'f["counters"]["status"] == "WARN" and [c["level"] for c in f["counters"]["changes"]] == ["WARN"]'
  check 'f["counters"]["changes"][0]["node"] == "gpa-node1" and f["counters"]["changes"][0]["reset"]'
  check 'not any(c["test"] == "port_counters" for c in s["checks"])'
  [[ ! -s $run/bad-nodes.txt ]] || fail "bad-nodes.txt is not empty: $(cat "$run/bad-nodes.txt")"
  [[ $(cat "$run/watch-nodes.txt") == gpa-node1 ]] || fail "watch-nodes.txt holds '$(cat "$run/watch-nodes.txt")', not gpa-node1"
  check 's["failures"] == []'
  check '"went down 1 -&gt; 0 between the end of smoke and the start of nccl-scaling" in fabric'
  ;;
*)
  fail "unknown case"
  ;;
esac
echo "PASS ($case_name)"
