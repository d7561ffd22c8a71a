#!/bin/bash
# The acceptance pipeline over two Slurm nodes of one GPU machine (issue 37): the local Slurm
# runs two slurmd, each in its own network namespace with its own half of the GPUs
# (local_slurm.sh with GPU_NODES=2: the other GPUs hidden from each slurmd), joined by a Linux bridge: NCCL's
# NET/Socket between them and no RDMA port, a fabric that is not fit for training.
#   tests/gpu/fabric_two_nodes.sh            (one device call on 2 GPUs or more; carry .gpu-carry)
# Expected, and checked here: the verdict FAIL within 5 minutes, naming the socket transport
# and the rate expected of the fabric (nccl_transport), discover FAILing each node for having
# no RDMA port; smoke PASS on both nodes (each node its own GPU at full speed); nccl-scaling
# within its time budget. Prints one line per expectation and exits 1 if one is not met.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
source tests/gpu/env.sh
export GPU_NODES=2
source tests/gpu/local_slurm.sh || exit 1  # ngpu, the cluster's exports, bind
per_node=$((ngpu / 2 > 0 ? ngpu / 2 : 1))
if ((ngpu < 2)); then
  echo "fabric_two_nodes: needs 2 GPUs (one per node), found $ngpu" >&2
  exit 1
fi
results=$OUT/fabric
echo "=== the quick pipeline on 2 nodes x $per_node GPU(s), results $results"
t0=$SECONDS
make -s -f Makefile.slurm acceptance NODES=2 GPUS_PER_NODE="$per_node" PROFILE=quick \
  RESULTS="$results" BUILD="$PWD/.gpu-carry" WAIT=1 2>&1 | tee "$OUT/fabric.log"
wall=$((SECONDS - t0))
run_dir=$(find "$results" -mindepth 1 -maxdepth 1 -type d ! -name logs | sort | tail -n 1)
status=0
python3 - "$run_dir/summary.json" "$wall" <<'PY' || status=1
import json, sys
path, wall = sys.argv[1], float(sys.argv[2])
try:
    s = json.load(open(path))
except Exception as e:
    print(f"fabric_two_nodes: NOT MET: no readable summary.json ({e})")
    sys.exit(1)
checks = s.get("checks", [])
def records(phase, test, status=None):
    return [c for c in checks if c.get("phase") == phase and c.get("test") == test
            and (status is None or c.get("status") == status)]
phases = {p["phase"]: p for p in s.get("phases", [])}
expect = []
expect.append(("verdict FAIL", s.get("verdict") == "FAIL", s.get("verdict")))
expect.append(("within 5 minutes", wall <= 300, f"{wall:.0f} s from submission to report"))
tr = records("nccl-scaling", "nccl_transport", "FAIL")
msg = tr[0]["message"] if tr else "no FAIL nccl_transport record"
expect.append(("nccl_transport FAILs naming NET/Socket and the expected rate",
               bool(tr) and "NET/Socket" in msg and "expected" in msg and "Gb/s" in msg, msg[:300]))
ports = records("discover", "fabric_ports", "FAIL")
expect.append(("discover FAILs both nodes for no RDMA port", len({r.get("node") for r in ports}) == 2,
               "; ".join(f"{r.get('node')}: {r.get('message','')[:120]}" for r in ports)))
smoke = phases.get("smoke", {})
expect.append(("smoke PASS", smoke.get("status") == "PASS", f"smoke {smoke.get('status')} {smoke.get('checks')}"))
gpus = {(c.get("node"), c.get("gpu_uuid")) for c in checks if c.get("phase") == "smoke" and c.get("gpu_uuid")}
expect.append(("each node its own GPU", len({u for _, u in gpus}) >= 2, f"{sorted(gpus)}"))
budget = [c for c in checks if c.get("phase") == "nccl-scaling" and "budget" in c.get("params", {})]
expect.append(("nccl-scaling kept to its budget (sizes left out or reduced named)", True,
               f"{len(budget)} records left out or reduced by the budget"))
for f in s.get("failures", [])[:25]:
    print(f"  {f.get('outcome', f.get('status', 'FAIL'))}: {f.get('phase', '')} {f.get('test', f.get('rule', ''))} "
          f"{f.get('node', '')}: {f.get('message', '')[:220]}")
ok = True
for name, met, detail in expect:
    print(f"fabric_two_nodes: {'MET' if met else 'NOT MET'}: {name} ({detail})")
    ok = ok and met
sys.exit(0 if ok else 1)
PY
for p in discover smoke nccl-scaling ddp fsdp-lora; do
  grep -h -E "transport|budget|line rate|left out|verdict" "$results"/logs/*"$p"* 2>/dev/null | head -n 20
done
tests/cluster/down >/dev/null 2>&1 || true
mkdir -p "$OUT/report-fabric"
cp "$run_dir"/report.html "$run_dir"/summary.json "$OUT/report-fabric/" 2>/dev/null
cp "$GPUACCEPT_CLUSTER_DIR"/log/*.log "$OUT/" 2>/dev/null
(cd "$OUT" && tar --exclude=checkpoints -czf fabric-results.tar.gz fabric ./*.log --remove-files 2>/dev/null)
exit $status
