#!/bin/bash
# gpuaccept-health as the local cluster's HealthCheckProgram (issue 19, part 2): slurmd runs it
# every few seconds on both nodes; with a fault injected on gpa-node2 (a file the wrapper
# turns into --debug-fail) gpa-node2 is drained by the program itself, with the reason, and
# gpa-node1 stays up. The health check goes into slurm.conf by a fresh start of the cluster
# (GPUACCEPT_CLUSTER_EXTRA_CONF), not `scontrol reconfigure`: from Slurm 23.11 that restarts
# slurmctld alone here, the slurmds keep their old configuration (Debian 13's 24.11), and on
# 22.05 the namespaced slurmds no longer found a later test's tasks after it. At the end,
# whatever happens, the cluster is started again from its own configuration.
set -euo pipefail
root="$GPUACCEPT_RESULTS/health-test-$$"
mkdir -p "$root"
fail() { echo "FAIL (health): $*" >&2; exit 1; }
conf="$SLURM_CONF"
restore() {
  "$GPUACCEPT_SOURCE/tests/cluster/down" >/dev/null 2>&1 || true
  env -u GPUACCEPT_CLUSTER_EXTRA_CONF "$GPUACCEPT_SOURCE/tests/cluster/up" >/dev/null 2>&1 ||
    echo "health: the cluster did not come back up" >&2
  scontrol update NodeName=gpa-node2 State=RESUME 2>/dev/null || true
  rm -rf "$root"
}
trap restore EXIT

# 1. By hand, on both nodes: healthy, one line, well within the 10 s a prolog may take.
out=$(srun -N2 --ntasks-per-node=1 "$GPUACCEPT_BIN/gpuaccept-health" --expect-gpus 0)
echo "$out"
[[ $(grep -c "^gpuaccept-health: OK gpa-node[12]: 0 GPU(s)" <<<"$out") == 2 ]] || fail "not OK on both nodes"
set +e
srun -N1 -w gpa-node1 "$GPUACCEPT_BIN/gpuaccept-health" --expect-gpus 1 >"$root/bad.out" 2>"$root/bad.err"
rc=$?
set -e
[[ $rc == 1 ]] || fail "a node without the GPU it should have: exit $rc, expected 1"
grep -q "^gpuaccept-health: FAIL gpa-node1: 0 GPU(s) usable by CUDA, 1 expected" "$root/bad.err" || fail "$(cat "$root/bad.err")"
[[ ! -s $root/bad.out ]] || fail "a failing check wrote to stdout: $(cat "$root/bad.out")"

# 2. As slurmd's HealthCheckProgram (no arguments, slurmd's environment: SLURMD_NODENAME, not
#    SLURM_CONF), through a wrapper, as docs/health-check.md shows.
wrapper="$root/health-check"
cat >"$wrapper" <<WRAP
#!/bin/sh
export SLURM_CONF='$conf'
fault=''
[ -f '$root'/fault-"\$SLURMD_NODENAME" ] && fault="--debug-fail=test fault on \$SLURMD_NODENAME"
exec '$GPUACCEPT_BIN/gpuaccept-health' --expect-gpus 0 --drain \${fault:+"\$fault"} >>'$root'/health-"\$SLURMD_NODENAME".log 2>&1
WRAP
chmod +x "$wrapper"
"$GPUACCEPT_SOURCE/tests/cluster/down" >/dev/null 2>&1
GPUACCEPT_CLUSTER_EXTRA_CONF=$(printf 'HealthCheckProgram=%s\nHealthCheckInterval=2\nHealthCheckNodeState=ANY' "$wrapper") \
  "$GPUACCEPT_SOURCE/tests/cluster/up" >"$root/up.log" 2>&1 || fail "the cluster did not start with the health check: $(cat "$root/up.log")"
grep -q "^HealthCheckProgram=$wrapper\$" "$conf" || fail "slurm.conf has no HealthCheckProgram=$wrapper"
# The fault only now: slurmd runs the check before it registers, and up waits for idle nodes.
touch "$root/fault-gpa-node2"
drained=""
for _ in $(seq 60); do
  node=$(scontrol show node gpa-node2)
  if grep -q "State=[A-Z+]*DRAIN" <<<"$node"; then drained=$node; break; fi
  sleep 0.5
done
[[ -n $drained ]] || fail "gpa-node2 was not drained within 30 s; its log: $(cat "$root/health-gpa-node2.log" 2>/dev/null)"
grep -q "Reason=gpuaccept-health: injected by --debug-fail: test fault on gpa-node2" <<<"$drained" \
  || fail "gpa-node2's reason: $(grep -o 'Reason=.*' <<<"$drained")"
grep -q "gpuaccept-health: OK gpa-node1" "$root/health-gpa-node1.log" || fail "gpa-node1's check: $(cat "$root/health-gpa-node1.log")"
! scontrol show node gpa-node1 | grep -q "State=[A-Z+]*DRAIN" || fail "gpa-node1 was drained too"
echo "health: ok"
