#!/bin/bash
# Runs one fuzz target for a while: the committed seeds (tests/fuzz/seeds/TARGET, read
# only) plus a working corpus that grows across runs (WORK/corpus/TARGET); crashes, hangs
# (-timeout), leaks and out-of-memory inputs land in WORK/artifacts/TARGET. Exits 0 when
# nothing was found, 1 when libFuzzer found something (its report and the input's path are
# in the output), 77 when the target was not built (clang missing: build.sh said why).
#   tests/fuzz/run.sh TARGET SECONDS [WORK]    (WORK default build/fuzz; TARGET: wire, html,
#                                              config, result_file, run_dir)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
target=$1 seconds=$2 work=${3:-$root/build/fuzz}
bin=$work/bin/${target}_fuzz
if [ ! -x "$bin" ]; then
  echo "fuzz: SKIP: $bin not built (tests/fuzz/build.sh: clang++ with libFuzzer missing?)" >&2
  exit 77
fi
corpus=$work/corpus/$target artifacts=$work/artifacts/$target
mkdir -p "$corpus" "$artifacts"
log=$work/logs/$target-$(date +%Y%m%d-%H%M%S).log
mkdir -p "$(dirname "$log")"
export TMPDIR=${TMPDIR:-/tmp}
# Symbolized reports where llvm-symbolizer is installed (package llvm-14).
for s in "$(command -v llvm-symbolizer || true)" /usr/lib/llvm-14/bin/llvm-symbolizer; do
  if [ -n "$s" ] && [ -x "$s" ]; then export ASAN_SYMBOLIZER_PATH=$s; break; fi
done
# -timeout: one input may take 20 s (a reader child is killed after FUZZ_READ_LIMIT_MS and
# reaped within 2 s). -malloc_limit_mb above the reader child's 4 GiB address-space cap: a
# child's huge allocation fails there (as in production) before libFuzzer's limit sees it.
start=$(date +%s)
set +e
"$bin" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -malloc_limit_mb=8192 \
  -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" "$root/tests/fuzz/seeds/$target" >"$log" 2>&1
rc=$?
set -e
took=$(( $(date +%s) - start ))
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
if [ "$rc" -ne 0 ]; then
  grep -E 'FUZZ FINDING|ERROR:|SUMMARY:|runtime error|Test unit written|artifact' "$log" | head -n 40 >&2 || true
  echo "fuzz: $target: FOUND SOMETHING after ${took} s, ${execs:-?} execs (libFuzzer exit $rc); log: $log" >&2
  exit 1
fi
echo "fuzz: $target: ${took} s, ${execs:-?} execs (${rate:-?}/s), corpus $(find "$corpus" -type f | wc -l) files," \
     "0 crashes, 0 hangs, 0 sanitizer reports; log: $log"
