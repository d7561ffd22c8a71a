#!/bin/bash
# Fault matrix (docs/reliability.md): the results filesystem fails under a running smoke.
#   test_fault_results_fs.sh full      a small tmpfs as the results root, filled to the last byte
#   test_fault_results_fs.sh readonly  the same tmpfs remounted read-only
# once the phase has started. The phase must end (no hang) with a clear ERROR in its log naming
# the cause, and leave no results file, half-written or temporary; the report on that run
# says the phase did not report (FAIL), never PASS.
# Each node's slurmd runs in a mount namespace of its own (tests/cluster/up), so the tmpfs is
# mounted in gpa-node1's and the job runs there alone (one node, two ranks).
set -euo pipefail
# shellcheck source=tests/cluster/fault_lib.sh
source "$(dirname "$0")/fault_lib.sh"
mode=${1:?full or readonly}
node=gpa-node1
root="$GPUACCEPT_RESULTS/fault-fs-$mode-$$"
mnt="$root/fs"
mkdir -p "$root/logs" "$root/stream" "$mnt"
sd=$(slurmd_pid "$node")
ns() { nsenter -t "$sd" -m -r -- "$@"; }  # -r: the slurmd's root too (a chroot's, under .ci/debian13)
cleanup() { ns umount -l "$mnt" 2>/dev/null || true; }
trap cleanup EXIT
ns mount -t tmpfs -o size=8m,mode=1777 gpa-results "$mnt"
view="/proc/$sd/root$mnt"  # the tmpfs as the node sees it
# The filesystem stream goes elsewhere (fs_dir), so it keeps the phase busy without filling the tmpfs.
SMOKE_FS_DIR="$root/stream" submit_smoke "$root" "$mnt" GPUACCEPT_PMIX_TIMEOUT=20 -N1 -w "$node"
echo "results root $mnt (tmpfs in $node's mount namespace)"
[[ -d $view/$job/smoke.parts ]] || { ls -laR "$view" || true; echo "no checkpoints before the fault"; }
case $mode in
  full)
    ns dd if=/dev/zero of="$mnt/filler" bs=64k status=none 2>/dev/null || true
    echo "filled: $(ns df -h "$mnt" | tail -1)"
    ;;
  readonly)
    for _ in $(seq 50); do ns mount -o remount,ro "$mnt" 2>/dev/null && break; sleep 0.1; done
    ns touch "$mnt/probe" 2>/dev/null && { echo "the results root is still writable"; exit 1; }
    echo "remounted read-only"
    ;;
esac
wait_job_gone "$job" 90 || { cat "$log"; scancel "$job"; echo "the job did not end within 90 s"; exit 1; }
cat "$log"
run="$view/$job"
ls -la "$run" "$run"/smoke.parts 2>/dev/null || true
# No results file, complete or half-written, and no temporary.
if [[ -e $run/smoke.h5 ]]; then echo "smoke.h5 was written on a $mode filesystem"; exit 1; fi
if find "$run" -name '.*tmp*' | grep .; then echo "a temporary file was left behind"; exit 1; fi
# A clear ERROR naming the cause, from the phase (and from salvage, which cannot write either).
case $mode in
  full) why="No space left on device" ;;
  readonly) why="Read-only file system" ;;
esac
grep -q "ERROR.*$why" "$log" || { echo "the log has no ERROR saying '$why'"; exit 1; }
grep -q "phase smoke ended with exit code [1-9]" "$log" || { echo "the step did not fail"; exit 1; }
# The report on that run: the phase did not report, FAIL (written outside the broken filesystem).
mkdir -p "$root/report"
set +e
ns "$GPUACCEPT_BIN/gpuaccept-report" "$mnt/$job" --no-history --out "$root/report" --expect-phases smoke >"$root/report.out" 2>&1
rc=$?
set -e
cat "$root/report.out"
[[ $rc == 1 ]] || { echo "report exit code $rc, expected 1 (FAIL)"; exit 1; }
python3 - "$root/report/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
assert s["verdict"] == "FAIL", s["verdict"]
text = json.dumps(s)
assert "smoke" in text and ("did not report" in text or "smoke.h5 is missing" in text), "no ERROR naming smoke"
PY
cleanup
trap - EXIT
rm -rf "$root"
echo "results filesystem $mode: ok"
