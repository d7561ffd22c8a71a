#!/bin/bash
# Runs one fuzz target as JOBS libFuzzer processes at once (-jobs/-workers), each for SECONDS,
# sharing the working corpus (each reloads the others' finds): JOBS x SECONDS CPU-seconds in
# SECONDS, for the long runs on a machine with many cores. Otherwise as tests/fuzz/run.sh:
# the committed seeds read only, crashes, hangs and sanitizer findings in WORK/artifacts/TARGET.
#   tests/fuzz/run_parallel.sh TARGET SECONDS JOBS [WORK]      (WORK default build/fuzz)
# Exit 0: nothing found (the totals printed); 1: a job found something (its log named).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
target=$1 seconds=$2 jobs=$3 work=${4:-$root/build/fuzz}
bin=$work/bin/${target}_fuzz
[ -x "$bin" ] || { echo "fuzz: SKIP: $bin not built (tests/fuzz/build.sh)" >&2; exit 77; }
corpus=$work/corpus/$target artifacts=$work/artifacts/$target
logs=$work/logs/$target-x$jobs-$(date +%Y%m%d-%H%M%S)
mkdir -p "$corpus" "$artifacts" "$logs"
export TMPDIR=${TMPDIR:-/tmp}
for s in "$(command -v llvm-symbolizer || true)" /usr/lib/llvm-14/bin/llvm-symbolizer; do
  if [ -n "$s" ] && [ -x "$s" ]; then export ASAN_SYMBOLIZER_PATH=$s; break; fi
done
before=$(find "$artifacts" -type f | wc -l)
start=$(date +%s)
set +e
# The same limits as run.sh (it says why); each job writes fuzz-N.log in $logs.
(cd "$logs" && "$bin" -jobs="$jobs" -workers="$jobs" -reload=1 -max_total_time="$seconds" -timeout=20 \
  -rss_limit_mb=4096 -malloc_limit_mb=8192 -print_final_stats=1 -artifact_prefix="$artifacts/" \
  "$corpus" "$root/tests/fuzz/seeds/$target" >"$logs/master.log" 2>&1)
rc=$?
set -e
took=$(( $(date +%s) - start ))
execs=$(cat "$logs"/fuzz-*.log | sed -n 's/^stat::number_of_executed_units: *//p' | awk '{s += $1} END {print s + 0}')
finished=$(grep -l '^stat::number_of_executed_units' "$logs"/fuzz-*.log | wc -l)
after=$(find "$artifacts" -type f | wc -l)
if [ "$rc" -ne 0 ] || [ "$after" -gt "$before" ]; then
  grep -hE 'FUZZ FINDING|Test unit written|artifact' "$logs"/fuzz-*.log | head -n 20 >&2 || true
  echo "fuzz: $target: FOUND SOMETHING ($jobs jobs, ${took} s, libFuzzer exit $rc, $((after - before)) new artifacts); logs: $logs" >&2
  exit 1
fi
echo "fuzz: $target: $jobs jobs x ${took} s = $((jobs * took)) CPU-seconds, $execs execs ($finished jobs reported)," \
     "corpus $(find "$corpus" -type f | wc -l) files, 0 crashes, 0 hangs, 0 sanitizer reports; logs: $logs"
