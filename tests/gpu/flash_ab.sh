#!/bin/bash
# Two builds of flash-attention-tests on one GPU, alternately, in one call: the attention's
# forward and backward at ddp's shape (B 16, T 1024, 12 heads of 64, packed, with the column
# sums) and fsdp-lora's (B 2, T 4096, 28/4 heads of 128), each build's timing only:
#   tests/gpu/flash_ab.sh BIN_A BIN_B [ROUNDS]     (after: source tests/gpu/env.sh)
# First B's checks against float64 (every variant, both layouts; exit status 1 if one fails),
# then ROUNDS [3] rounds of A and B (`--timing-only`: 10 and 5 timed repetitions after a
# warm-up, the best kept), then each build's median of the best backward, per variant and
# shape. NCU=1: Nsight Compute on both builds' backward wgmma kernels at ddp's shape too (the
# first dK/dV and dQ launches, their duration, throughput against the peaks and stall reasons),
# where ncu exists and the counters are allowed.
set -uo pipefail
[ $# -ge 2 ] || { sed -n '2,11p' "$0"; exit 2; }
a=$1 b=$2 rounds=${3:-3}
OUT=${OUT:-$(mktemp -d -p /var/tmp)}
mkdir -p "$OUT"
rc=0
"$b" --no-timing >"$OUT/flash-checks-B.log" 2>&1 || rc=1
grep -E 'FAIL|summary' "$OUT/flash-checks-B.log"
for r in $(seq 1 "$rounds"); do
  for side in A B; do
    bin=$a
    [ "$side" = B ] && bin=$b
    timeout --kill-after=10 300 "$bin" --timing-only >"$OUT/flash-timing-$side-$r.log" 2>&1 || rc=1
    # "flash info timing <variants> <shape> <layout> forward_ms=... backward_ms=X ..." -> side variants shape X
    sed -n 's/^flash info timing \([^ ]*\) \([^ ]*\) .*backward_ms=\([0-9.]*\) .*/\1 \2 \3/p' \
      "$OUT/flash-timing-$side-$r.log" | sed "s/^/$side /" | tee -a "$OUT/flash-ab.txt" | sed "s/^/round $r /"
  done
done
echo "median of the best backward, ms (side variants shape):"
# sorted by side, variants, shape and time: the middle line of each group (no asort in mawk)
sort -k1,1 -k2,2 -k3,3 -k4,4n "$OUT/flash-ab.txt" | awk '
  { key = $1 " " $2 " " $3; n[key]++; v[key, n[key]] = $4 }
  END { for (k in n) print k, v[k, int((n[k] + 1) / 2)] }' | sort
if [ "${NCU:-0}" = 1 ]; then
  ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
  if [ -z "$ncu" ]; then
    echo "flash_ab: ncu SKIP (no ncu on this machine)"
  else
    for side in A B; do
      bin=$a
      [ "$side" = B ] && bin=$b
      timeout --kill-after=10 240 "$ncu" -k 'regex:dkdv_wgmma|dq_from_ds_wgmma' -c 2 \
        --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
        --section WarpStateStats "$bin" --timing-only >"$OUT/flash-ncu-$side.txt" 2>&1
      echo "ncu $side ($bin):"
      grep -E '^  [a-z_:]*(dkdv|dq_from)|Duration|Memory Throughput|DRAM Throughput|L2 Cache Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Stall Long|Stall Barrier|Warp Cycles Per Issued|ERR_NVGPUCTRPERM' \
        "$OUT/flash-ncu-$side.txt" | cut -c1-150 | head -n 40
    done
  fi
fi
exit $rc
