#!/usr/bin/env bash
# The checkpoint's writer against the drill's dd-style write on the GPU machine's disk, without a
# GPU (tests/cluster/checkpoint_drill.cpp's bench mode): a rank file of each SIZE written three
# ways, in turn, ROUNDS times: the writer (writeback started behind it every WINDOW MiB), the
# same writer with writeback left to its fsync, and the dd-style write. RANKS processes at once,
# each into its own directory (as the ranks of a node save together; the processes start
# together and do the same sequence, so their writers meet, roughly). Defaults: ddp's state on one
# rank (1.49 GB) and fsdp-lora's with the base on one rank (4.11 GB), the writer's 64 MiB window.
#   SIZES="1493714944 4113669120" ROUNDS=3 WINDOWS="64 256" RANKS=1 tests/gpu/checkpoint_bench.sh
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
[[ -f tests/gpu/env.sh && -d .gpu-carry ]] && source tests/gpu/env.sh
BIN=${GPUACCEPT_BIN:-$ROOT/build/bin}
DIR=${DIR:-$ROOT/gpu-out/checkpoint-bench}
RANKS=${RANKS:-1}
mkdir -p "$DIR"
df -h "$DIR" | tail -n 1
echo "vm.dirty_background_ratio $(cat /proc/sys/vm/dirty_background_ratio), vm.dirty_ratio $(cat /proc/sys/vm/dirty_ratio)," \
  "memory $(awk '/MemTotal/{printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)"
for window in ${WINDOWS:-64}; do
  for size in ${SIZES:-1493714944 4113669120}; do
    echo "== $size bytes, $RANKS process(es) at once, writeback window $window MiB"
    for r in $(seq 0 $((RANKS - 1))); do
      "$BIN/checkpoint-drill" bench "$DIR/rank-$r" "$size" "${ROUNDS:-3}" "$window" | sed "s/^/[rank $r] /" &
    done
    wait
  done
done
rm -rf "$DIR"
