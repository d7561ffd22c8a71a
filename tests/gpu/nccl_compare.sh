#!/bin/bash
# nccl-scaling against NVIDIA/nccl-tests on this machine, collective by collective:
# out-of-place busbw must be >= 97% of nccl-tests' at every size >= 32 MiB, and time no
# worse than nccl-tests' (+3%, +1 us) at every size < 1 MiB. Same sizes, iterations,
# warmup and float data; our --profile full with 1 batch is nccl-tests' loop exactly (one
# timed region of -n iterations), with 5 batches the median of five.
# Setup: tests/gpu/nccl_common.sh, and nccl-tests built (MPI=1 for the srun launch):
#   NCCL_TESTS_BIN=/path/to/nccl-tests/build tests/gpu/nccl_compare.sh [collective...]
# NCCL_TESTS_LAUNCH overrides how nccl-tests starts, e.g. single process, N GPUs:
#   NCCL_TESTS_LAUNCH=" " NCCL_TESTS_ARGS="-g 8"
# OUR_ARGS adds flags to ours, e.g. OUR_ARGS=--nonblocking to see what that costs.
# shellcheck source=tests/gpu/nccl_common.sh
source "$(dirname "$0")/nccl_common.sh"
need
[ -n "${NCCL_TESTS_BIN:-}" ] || die "set NCCL_TESTS_BIN to nccl-tests' build directory"
colls=("$@")
[ ${#colls[@]} -gt 0 ] || colls=(all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv)
iters=${ITERS:-20}
warmup=${WARMUP:-5}
batches=${BATCHES:-5}
run=nccl-compare-$(date +%Y%m%dT%H%M%S)
dir=$RESULTS/$run.compare
mkdir -p "$dir"

ours=$dir/nccl-scaling.log
# shellcheck disable=SC2086  # OUR_ARGS is a list of flags
launch "$NRANKS" "$BIN/gpuaccept-nccl-scaling" --results "$RESULTS" --run-id "$run" -b 8 -e 8G -f 2 \
  -n "$iters" -w "$warmup" --batches "$batches" --profile full --dtypes float --scales intra_node \
  --collectives "$(IFS=,; echo "${colls[*]}")" ${OUR_ARGS:-} 2>&1 | tee "$ours" >/dev/null || true

# "[nccl-scaling r0/8 host] <row>" -> "<row>" for the table after "# <coll> float |".
our_rows() {
  sed 's/^\[[^]]*\] //' "$ours" | awk -v c="$1" '
    $0 ~ "^# " c " float \\|" {on = 1; next}
    on && /^# Avg bus bandwidth/ {exit}
    on && $1 ~ /^[0-9]+$/ {print}'
}
their_rows() { awk '$1 ~ /^[0-9]+$/ && NF >= 11 {print}' "$1"; }

status=0
for c in "${colls[@]}"; do
  theirs=$dir/${c}_perf.log
  # shellcheck disable=SC2086
  ${NCCL_TESTS_LAUNCH-srun -N1 -n $NRANKS --gpus-per-task=1 --mpi=pmix} \
    "$NCCL_TESTS_BIN/${c}_perf" -b 8 -e 8G -f 2 -n "$iters" -w "$warmup" -d float ${NCCL_TESTS_ARGS:-} >"$theirs" 2>&1 ||
    die "nccl-tests ${c}_perf failed: $theirs"
  echo "== $c (size, nccl-tests busbw / time, ours, ratio)"
  # Out-of-place time and busbw counted from the end of the row: older nccl-tests print no
  # redop/root columns for some collectives.
  join <(their_rows "$theirs" | awk '{print $1, $(NF-7), $(NF-5)}' | sort -k1,1) \
       <(our_rows "$c" | awk '{print $1, $(NF-7), $(NF-5)}' | sort -k1,1) | sort -n | awk '
    { size = $1; t_time = $2; t_bw = $3; o_time = $4; o_bw = $5; verdict = "";
      if (size >= 33554432 && t_bw > 0) { r = o_bw / t_bw; verdict = (r >= 0.97) ? "ok" : "SLOW"; }
      else if (size < 1048576) { r = (o_time > 0) ? t_time / o_time : 0; verdict = (o_time <= t_time * 1.03 + 1) ? "ok" : "SLOW"; }
      else r = (t_bw > 0) ? o_bw / t_bw : 0;
      printf "%12d  %9s %9s  %9s %9s  %6.3f %s\n", size, t_bw, t_time, o_bw, o_time, r, verdict;
      if (verdict == "SLOW") bad = 1 }
    END { exit bad }' || status=1
done
[ "$status" -eq 0 ] && echo "compare: ok" || echo "compare: some sizes below target (SLOW)"
exit "$status"
