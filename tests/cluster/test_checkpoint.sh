#!/bin/bash
# Training checkpoints on the real local Slurm cluster (issue: training checkpoints), the CPU
# side with a small model state (tests/cluster/checkpoint_drill.cpp) under srun --mpi=pmix:
#   1. 4 ranks on 2 nodes save step 1: a manifest and 4 rank files;
#   2. 3 ranks restore it (another world size): every value as saved;
#   3. rank 3 is killed (SIGKILL) in the middle of saving step 2: no manifest for step 2, and a
#      restore passes it over naming the rank that did not finish, and restores step 1;
#   4. a full filesystem (a small tmpfs in gpa-node1's mount namespace): the save is not
#      complete, "No space left on device" named, no manifest;
#   5. a truncated rank file and a flipped bit: the restore is refused naming the file and
#      the tensor.
set -euo pipefail
# shellcheck source=tests/cluster/fault_lib.sh
source "$(dirname "$0")/fault_lib.sh"
drill=$GPUACCEPT_BIN/checkpoint-drill
[[ -x $drill ]] || { echo "no $drill (cmake --build build --target checkpoint-drill)"; exit 1; }
root=$GPUACCEPT_RESULTS/checkpoint-drill-$$
export GPUACCEPT_PMIX_TIMEOUT=15
step() { timeout --kill-after=10 120 srun --mpi=pmix --time=00:03:00 "$@"; }
expect() {  # expect TEXT PATTERN WHAT
  grep -qE -- "$2" <<<"$1" || { echo "$1"; echo "FAILED: $3 (no /$2/)"; exit 1; }
}

echo "--- 1. save by 4 ranks"
out=$(step -N2 -n4 "$drill" save "$root" 1 2>&1)
echo "$out"
expect "$out" "save step 1: complete" "the save completes"
[[ -f $root/step-00000001/manifest.json ]] || { echo "no manifest"; exit 1; }
[[ $(ls "$root"/step-00000001/rank-*.safetensors | wc -l) == 4 ]] || { echo "not 4 rank files"; exit 1; }

echo "--- 2. restore by 3 ranks"
out=$(step -N2 -n3 "$drill" restore "$root" 2>&1)
echo "$out"
expect "$out" "restore: step 1 .*saved by 4 ranks, restored by 3\): every value as saved" "a restore on 3 ranks"

echo "--- 3. rank 3 killed while saving step 2"
set +e
out=$(step -N2 -n4 --kill-on-bad-exit=0 "$drill" save "$root" 2 --die-rank 3 2>&1)
rc=$?
set -e
echo "$out"
[[ $rc != 0 ]] || { echo "the save with a dead rank exited 0"; exit 1; }
[[ ! -e $root/step-00000002/manifest.json ]] || { echo "a manifest for the unfinished step 2"; exit 1; }
out=$(step -N2 -n4 "$drill" restore "$root" 2>&1)
echo "$out"
expect "$out" "passed over: .*step-00000002: no manifest \(a save that did not finish; .*missing: ([0-9, ]*)?3" \
  "the unfinished save passed over, rank 3 named"
expect "$out" "restore: step 1 .*every value as saved" "the previous checkpoint restored"

echo "--- 4. the filesystem full during a save"
node=gpa-node1
mnt=$root/full
mkdir -p "$mnt"
sd=$(slurmd_pid "$node")
ns() { nsenter -t "$sd" -m -r -- "$@"; }  # -r: the slurmd's root too (a chroot's, under .ci/debian13)
trap 'ns umount -l "$mnt" 2>/dev/null || true' EXIT
ns mount -t tmpfs -o size=8m,mode=1777 gpa-ckpt "$mnt"
set +e
out=$(step -N1 -w "$node" -n2 "$drill" save "$mnt" 1 --elements 4000000 2>&1)
rc=$?
set -e
echo "$out"
[[ $rc != 0 ]] || { echo "a save on a full filesystem exited 0"; exit 1; }
expect "$out" "save step 1: NOT complete: .*No space left on device" "the full filesystem named"
ns test -e "$mnt/step-00000001/manifest.json" && { echo "a manifest on the full filesystem"; exit 1; }
ns umount -l "$mnt"
trap - EXIT

echo "--- 5. a truncated rank file, a flipped bit"
victim=$root/step-00000001/rank-00002.safetensors
cp "$victim" "$root/keep"
truncate -s -1000 "$victim"
set +e
out=$(step -N2 -n4 "$drill" restore "$root" 2>&1)
rc=$?
set -e
echo "$out"
[[ $rc != 0 ]] || { echo "a truncated checkpoint restored"; exit 1; }
expect "$out" "rank-00002.safetensors: .*bytes, the manifest says .*\(truncated\)" "the truncated file named"
cp "$root/keep" "$victim"
# One bit in the last tensor's data (adam_m: the file's last bytes).
size=$(stat -c %s "$victim")
printf '\x55' | dd of="$victim" bs=1 seek=$((size - 8)) conv=notrunc status=none
set +e
out=$(step -N2 -n4 "$drill" restore "$root" 2>&1)
rc=$?
set -e
echo "$out"
[[ $rc != 0 ]] || { echo "a damaged checkpoint restored"; exit 1; }
expect "$out" "rank-00002.safetensors: tensor 'adam_m': checksum" "the damaged tensor named"
rm -rf "$root"
echo "checkpoint test: ok"
