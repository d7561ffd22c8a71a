#!/bin/bash
# `make install PREFIX=...` (issue 38, point 6): the binaries, sbatch scripts, configs and the
# health check's wrapper under PREFIX, and the slurm.conf lines that point at it. The installed
# tree is used as an operator would: the wrapper on both nodes through srun (as slurmd's
# HealthCheckProgram runs it: no arguments), a phase through the installed Makefile.slurm, and
# the installed gpuaccept-report finding its thresholds beside it. The tree lies on the results
# directory, which every node of the local cluster sees (only /tmp is a node's own).
set -euo pipefail
src="$GPUACCEPT_SOURCE"
root="$GPUACCEPT_RESULTS/install-test-$$"
prefix="$root/opt/gpuaccept"
mkdir -p "$root"
fail() { echo "FAIL (install): $*" >&2; exit 1; }

out=$(make -s -f "$src/Makefile.slurm" install PREFIX="$prefix" BIN="$GPUACCEPT_BIN" HEALTH_ARGS="--expect-gpus 0" 2>&1)
echo "$out"
for f in bin/gpuaccept-health bin/gpuaccept-report bin/gpuaccept-discover libexec/gpuaccept/health-check \
         share/gpuaccept/sbatch/pipeline.sbatch share/gpuaccept/sbatch/common.sh share/gpuaccept/configs/local.yaml \
         share/gpuaccept/configs/thresholds/generic.yaml share/gpuaccept/Makefile.slurm share/gpuaccept/install.mk; do
  [[ -e $prefix/$f ]] || fail "$f not installed"
done
[[ -x $prefix/libexec/gpuaccept/health-check && -x $prefix/share/gpuaccept/sbatch/slurm_options.sh ]] || fail "not executable"
for line in "HealthCheckProgram=$prefix/libexec/gpuaccept/health-check" "Prolog=$prefix/libexec/gpuaccept/health-check" \
            "HealthCheckNodeState=IDLE" "PrologFlags=Alloc"; do
  grep -qF "    $line" <<<"$out" || fail "the slurm.conf lines lack $line"
done
sh -n "$prefix/libexec/gpuaccept/health-check" || fail "the wrapper is not valid sh"
grep -qF "export SLURM_CONF='$SLURM_CONF'" "$prefix/libexec/gpuaccept/health-check" || fail "the wrapper does not name slurm.conf"

# The wrapper as slurmd runs it: no arguments, on both nodes.
health=$(srun -N2 --ntasks-per-node=1 "$prefix/libexec/gpuaccept/health-check")
echo "$health"
[[ $(grep -c "^gpuaccept-health: OK gpa-node[12]: 0 GPU(s)" <<<"$health") == 2 ]] || fail "the installed health check is not OK on both nodes"

# A phase through the installed tree: its scripts, configs and binaries, not the source tree's.
out=$(make -s -f "$prefix/share/gpuaccept/Makefile.slurm" discover NODES=2 GPUS_PER_NODE=0 TASKS_PER_NODE=1 \
  PROFILE=local TIME=00:05:00 RESULTS="$root/results" 2>&1)
echo "$out"
job=$(sed -n 's/^discover job: *\([0-9]*\);.*/\1/p' <<<"$out")
[[ -n $job ]] || fail "no job from the installed Makefile.slurm"
for _ in $(seq 240); do squeue -h -j "$job" 2>/dev/null | grep -q . || break; sleep 0.5; done
"$RESULTS_CHECK" "$root/results/$job/discover.h5" --hosts 2
dump=$(h5dump -a config_path "$root/results/$job/discover.h5")
grep -qF "$prefix/share/gpuaccept/configs/local.yaml" <<<"$dump" || fail "the phase did not read the installed config: $dump"
grep -qF "phase discover ($prefix/bin/gpuaccept-discover) on 2 nodes" "$root/results/logs/gpuaccept-discover-$job.out" ||
  fail "the job did not run the installed binary: $(cat "$root/results/logs/gpuaccept-discover-$job.out")"
set +e
"$prefix/bin/gpuaccept-report" "$root/results/$job" >"$root/report.log" 2>&1
set -e
grep -qF "thresholds: $prefix/share/gpuaccept/configs/thresholds/generic.yaml" "$root/report.log" ||
  fail "the installed report did not find its thresholds: $(cat "$root/report.log")"

# An installed tree has no local test cluster to fall back on.
if LOCAL=1 make -s -f "$prefix/share/gpuaccept/Makefile.slurm" acceptance LOCAL=1 >"$root/local.log" 2>&1; then
  fail "the installed tree started a local cluster"
fi
grep -q "is an installed tree: it has no local test cluster" "$root/local.log" || fail "$(cat "$root/local.log")"

# A PREFIX that would need quoting in a Makefile is refused, not half installed.
if make -s -f "$src/Makefile.slurm" install PREFIX="$root/it's here" BIN="$GPUACCEPT_BIN" >"$root/bad.log" 2>&1; then
  fail "a PREFIX with a quote and a space was taken"
fi
grep -q "PREFIX (with DESTDIR) must be an absolute path" "$root/bad.log" || fail "$(cat "$root/bad.log")"
rm -rf "$root"
echo "install: ok"
