#!/usr/bin/env bash
# Does what a write carries change how fast the filesystem takes it? The checkpoint drill's
# yardstick (train/sequential_io.cpp) writes one 16 MiB block over and over, and the checkpoint
# writes fp32 weights that never repeat; a virtual disk that deduplicates or compresses would
# take the first faster and make the checkpoint look slow against it (checkpoint_efficiency).
# Here dd bs=16M conv=fsync writes the same number of bytes into DIR from three sources, in
# turn, ROUNDS times: /dev/zero, that repeated block, and random bytes that never repeat (both
# staged in /dev/shm first, so only the filesystem's part is timed).
#   DIR=gpu-out/io MIB=1424 ROUNDS=3 tests/gpu/probes/io_content.sh
set -euo pipefail
DIR=${DIR:-gpu-out/io}
MIB=${MIB:-1424}  # ddp's checkpoint file on one rank: 1.49 GB
ROUNDS=${ROUNDS:-3}
mkdir -p "$DIR"
stage=$(mktemp -d /dev/shm/io_content.XXXXXX)
trap 'rm -rf "$stage" "$DIR"/io_content.out' EXIT
df -h "$DIR" | tail -n 1
python3 - "$stage" "$MIB" <<'EOF'
import os, sys
stage, mib = sys.argv[1], int(sys.argv[2])
block = b"".join(((0x9e3779b97f4a7c15 * (i + 1)) & (2**64 - 1)).to_bytes(8, "little") for i in range(2 << 20))
with open(os.path.join(stage, "pattern"), "wb") as f:
    for _ in range(mib // 16):
        f.write(block)
with open(os.path.join(stage, "random"), "wb") as f:
    for _ in range(mib // 16):
        f.write(os.urandom(16 << 20))
EOF
count=$((MIB / 16))
for round in $(seq "$ROUNDS"); do
  for source in zero pattern random; do
    input=/dev/zero
    [ "$source" = zero ] || input=$stage/$source
    line=$(dd if="$input" of="$DIR/io_content.out" bs=16M count="$count" conv=fsync 2>&1 | tail -n 1)
    echo "io_content: round $round $source: $line"
    rm -f "$DIR/io_content.out"
    sync
  done
done
