#!/bin/bash
# The Debian 13 stack on the GPU machine (issue 36): binaries built in the Debian 13 chroot with
# CUDA 12.4 and NCCL 2.22 (STACK=debian13 tests/gpu/prepare, carried as .gpu-carry-debian13)
# run the pipeline's discover and nccl-scaling phases and the report through Slurm 24.11's own
# daemons, PMIx 5 and HDF5 1.14 (all unpacked from Debian 13's packages into a prefix of their
# own), on this machine's driver 580: a cluster on the older CUDA is served.
#   tests/gpu/debian13_stack.sh        (one device call; carry .gpu-carry-debian13)
# smoke, ddp and fsdp-lora are not run: they need CUDA 12.4's libcublasLt.so.12 (442 MB), more
# than a device call carries (tests/gpu/prepare says so).
# Prints the verdict, each phase's status, the library versions discover found loaded, the
# Slurm client check and nccl-scaling's all_reduce busbw; exits 1 on FAIL or ERROR.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
export GPA_CARRY=.gpu-carry-debian13 GPA_PREFIX=/opt/gpuaccept-debian13
[ -d "$GPA_CARRY/bin" ] || [ -f "$GPA_CARRY/bin.tar.xz" ] || { echo "debian13_stack: no $GPA_CARRY: run STACK=debian13 tests/gpu/prepare here first" >&2; exit 2; }
source tests/gpu/env.sh
source tests/gpu/local_slurm.sh || exit 1  # ngpu, the cluster's exports, bind
sinfo -V
results=$OUT/debian13
t0=$SECONDS
make -s -f Makefile.slurm acceptance NODES=1 GPUS_PER_NODE="$ngpu" PROFILE=quick PHASES="discover nccl-scaling" \
  RESULTS="$results" BUILD="$PWD/$GPA_CARRY" WAIT=1 2>&1 | tee "$OUT/debian13.log"
wall=$((SECONDS - t0))
run_dir=$(find "$results" -mindepth 1 -maxdepth 1 -type d ! -name logs | sort | tail -n 1)
status=0
python3 - "$run_dir/summary.json" "$wall" <<'PY' || status=1
import json, sys
s = json.load(open(sys.argv[1]))
print(f"debian13: wall {float(sys.argv[2]):.0f} s, verdict {s['verdict']}")
for p in s["phases"]:
    print(f"  {p['phase']:<13} {p['status']:<6} {p['checks']}")
for c in s["checks"]:
    if c["phase"] == "discover" and c["test"] in ("library_versions", "slurm_client"):
        print(f"  {c['test']} {c.get('node', '')}: {c['status']}: {c['message'][:300]}")
best = {}
for c in s["checks"]:
    if c["phase"] == "nccl-scaling" and c["test"] == "all_reduce" and c["metric"] == "busbw":
        b = int(c["params"].get("bytes", 0))
        key = (c["params"].get("scale"), c["params"].get("dtype"), c["params"].get("inplace"))
        if b >= best.get(key, (0, 0))[0]:
            best[key] = (b, c["value"])
for k, (b, v) in sorted(best.items()):
    print(f"  all_reduce busbw {k}: {v:.1f} GB/s at {b} B")
sys.exit(1 if s["verdict"] in ("FAIL", "ERROR") else 0)
PY
tests/cluster/down >/dev/null 2>&1 || true
mkdir -p "$OUT/report-debian13"
cp "$run_dir"/report.html "$run_dir"/summary.json "$OUT/report-debian13/" 2>/dev/null
exit $status
