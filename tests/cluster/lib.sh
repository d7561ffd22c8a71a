# shellcheck shell=bash disable=SC2034  # variables are used by the scripts that source this
# Shared settings and helpers for tests/cluster/{up,down,status}. Sourced, not run.
#
# The local cluster: slurmctld in the root network namespace on a bridge address,
# one slurmd per node, each in its own network namespace (own IP address and
# hostname, private /tmp), one munged. Everything listens only on the bridge or
# loopback, nothing leaves the machine. Needs root.
#
# Environment knobs (all optional):
#   GPUACCEPT_CLUSTER_DIR    state dir: config, logs, spool, results
#                            [/var/tmp/gpuaccept-cluster]. Must not be under /tmp,
#                            because every node mounts its own private /tmp.
#   GPUACCEPT_CLUSTER_NET    the /24 for the bridge, as A.B.C or A.B.C.0/24
#                            [10.213.7]; controller .1, node i at .(10+i).
#   GPUACCEPT_CLUSTER_NODES  number of nodes gpa-node1..gpa-nodeN [2]
#   GPUACCEPT_CLUSTER_CPUS   CPUs each node claims [max(nproc, 4)]
#   GPUACCEPT_CLUSTER_MEM    RealMemory in MB each node claims [4000]
#   GPUACCEPT_CLUSTER_GRES   Gres= of every node, e.g. "gpu:4" or "gpu:a100:2" [none].
#                            GresTypes is derived from it.
#   GPUACCEPT_CLUSTER_GRES_LAST_NODE
#                            Gres= of the last node instead, with no more of each GPU type
#                            than GPUACCEPT_CLUSTER_GRES (its fake devices serve both), e.g.
#                            "gpu:2": nodes that differ [none]
#   GPUACCEPT_CLUSTER_GRES_CONF_LINES
#                            gres.conf contents, verbatim, newline separated, e.g.
#                            "Name=gpu File=/dev/nvidia[0-3]"; needs GPUACCEPT_CLUSTER_GRES
#                            too. [none: gres.conf is derived from GPUACCEPT_CLUSTER_GRES,
#                            with fake GPU devices (/dev/null clones), see up]
#   GPUACCEPT_CLUSTER_DEBUG_FLAGS
#                            Slurm DebugFlags (e.g. Gres), with SlurmdDebug=debug [none]
#   GPUACCEPT_CLUSTER_TASK_PLUGIN
#                            Slurm's TaskPlugin [task/none: the nodes share this machine's
#                            CPUs]; task/affinity binds each task to its CPUs, as a real
#                            cluster should (tests/gpu/local_slurm.sh: one node, real CPUs)
#   GPUACCEPT_CLUSTER_EXTRA_CONF
#                            lines added to slurm.conf as they are (a test's HealthCheckProgram:
#                            a fresh start, since `scontrol reconfigure` does not reach the
#                            slurmds of Slurm 23.11 and later here) [none]
#   GPUACCEPT_CLUSTER_NODE_GPUS
#                            the GPUs (device minors) each node keeps, ';' between nodes,
#                            e.g. "0;1": each slurmd's mount namespace hides the machine's
#                            other GPUs, as a container runtime does, so that every node of a
#                            multi-GPU machine has its own, NVML and CUDA alike [none: all]
#   GPUACCEPT_SLURM_PREFIX   root where the slurm/munge .debs were unpacked with
#                            dpkg -x [empty: the system install].

set -euo pipefail

CLUSTER_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

DIR=${GPUACCEPT_CLUSTER_DIR:-/var/tmp/gpuaccept-cluster}
case $DIR in
  /tmp|/tmp/*) echo "GPUACCEPT_CLUSTER_DIR=$DIR: must be outside /tmp (nodes get a private /tmp)" >&2; exit 2 ;;
  /*) ;;
  *) echo "GPUACCEPT_CLUSTER_DIR=$DIR: must be an absolute path" >&2; exit 2 ;;
esac

NET=${GPUACCEPT_CLUSTER_NET:-10.213.7}
NET=${NET%.0/24}
if ! [[ $NET =~ ^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$ ]]; then
  echo "GPUACCEPT_CLUSTER_NET=$NET: want A.B.C or A.B.C.0/24" >&2; exit 2
fi
NNODES=${GPUACCEPT_CLUSTER_NODES:-2}
if ! [[ $NNODES =~ ^[1-9][0-9]?$ ]] || (( NNODES > 200 )); then
  echo "GPUACCEPT_CLUSTER_NODES=$NNODES: want 1..200" >&2; exit 2
fi

BRIDGE=gpabr0                 # host side of every node's veth is enslaved here
BRIDGE_IP=$NET.1
NODE_PREFIX=gpa-node
HOSTS_MARK='# gpuaccept-cluster'   # tags our /etc/hosts lines so down can drop them
# Not 6817/6818: a machine that is also a real Slurm node keeps its own daemons.
CTLD_PORT=16817
SLURMD_PORT=16818

CONF_DIR=$DIR/etc
CONF=$CONF_DIR/slurm.conf
GRES_CONF=$CONF_DIR/gres.conf
LOG_DIR=$DIR/log
RUN_DIR=$DIR/run
STATE_DIR=$DIR/state          # wiped on every fresh start: tests start from job id 1
NODES_DIR=$DIR/nodes          # per node: tmp/ (upper layer of the node's private /tmp overlay)
RESULTS=$DIR/results          # shared by all nodes (only /tmp is private)
MUNGE_DIR=$DIR/munge          # key, socket, pid, log: our own munged, not the system one
MUNGE_KEY=$MUNGE_DIR/munge.key
MUNGE_SOCKET=$MUNGE_DIR/munge.socket
MUNGE_PID=$MUNGE_DIR/munged.pid
CTLD_PID=$RUN_DIR/slurmctld.pid

node_name() { echo "$NODE_PREFIX$1"; }
node_ip()   { echo "$NET.$((10 + $1))"; }
node_veth() { echo "gpa-v$1"; }                  # interface names max 15 chars
slurmd_pid_file() { echo "$RUN_DIR/slurmd-$1.pid"; }   # slurm.conf writes it with %n

log() { echo "[cluster] $*" >&2; }

# gpus_to_hide NODE_INDEX: what node i's mount namespace covers, from GPUACCEPT_CLUSTER_NODE_GPUS:
# the device file of every other GPU (/dev/nvidiaN) and its /proc/driver/nvidia/gpus/<bus>
# entry, which NVML enumerates from (the driver's "Device Minor" there says which N it is).
gpus_to_hide() {
  [[ -n ${NODE_GPUS:-} ]] || return 0
  local keep dir minor
  keep=$(cut -d';' -f"$1" <<<"$NODE_GPUS")
  for dir in /proc/driver/nvidia/gpus/*; do
    [[ -r $dir/information ]] || continue
    minor=$(awk -F: '/Device Minor/ {gsub(/[[:space:]]/, "", $2); print $2}' "$dir/information")
    [[ -n $minor ]] || continue
    if ! [[ ",$keep," == *",$minor,"* ]]; then echo "/dev/nvidia$minor $dir"; fi
  done
}
die() { echo "[cluster] ERROR: $*" >&2; exit 1; }

# --- where the binaries are --------------------------------------------------
PREFIX=${GPUACCEPT_SLURM_PREFIX:-}
PREFIX=${PREFIX%/}
LIBDIR=$PREFIX/usr/lib/x86_64-linux-gnu
PLUGIN_DIR=$LIBDIR/slurm-wlm
# Environment for every Slurm/munge binary we run; empty for the system install.
SLURM_ENV=()
if [[ -n $PREFIX ]]; then
  SLURM_ENV=("LD_LIBRARY_PATH=$LIBDIR:$PLUGIN_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
fi

# Debian installs the daemons as slurmctld-wlm etc. behind an alternatives symlink
# (/usr/sbin/slurmctld), which dpkg -x does not create. They must not run under the -wlm
# name: Slurm 22.05 tells which daemon it is by its program name (run_in_daemon() compares
# the basename of argv[0] with "slurmctld", "slurmd", "slurmstepd"), and a slurmctld started
# as slurmctld-wlm skips what only the controller does, building every node's GRES from
# slurm.conf among it: "gres/gpu: ... configured:0", Gres=(null), and every
# `srun --gpus-per-task=1` refused as an invalid GRES specification (docs/gpu-tests.md).
# So the symlink the package's alternatives would make is made in the prefix.
find_bin() {
  local f
  for f in "$PREFIX/usr/sbin/$1" "$PREFIX/usr/bin/$1"; do
    if [[ -x $f ]]; then echo "$f"; return 0; fi
  done
  if [[ -n $PREFIX && -x $PREFIX/usr/sbin/$1-wlm ]]; then
    ln -sfn "$1-wlm" "$PREFIX/usr/sbin/$1"
    echo "$PREFIX/usr/sbin/$1"
    return 0
  fi
  die "cannot find $1 under ${PREFIX:-/}usr/{sbin,bin}"
}

# Run a Slurm client command against our cluster (our config, our libs).
sl() {
  local cmd=$1; shift
  env "${SLURM_ENV[@]}" SLURM_CONF="$CONF" "$(find_bin "$cmd")" "$@"
}

# --- processes ---------------------------------------------------------------
# alive PID: the process exists and is not a zombie (an init that does not
# reap, as in some containers, leaves dead daemons around as zombies).
alive() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }            # the state follows "(comm) "
  [[ -n $stat && ${stat%% *} != [ZX] ]]
}

# pid_alive PIDFILE COMM: the pid in PIDFILE runs and its command name starts
# with COMM (guards against a stale pid file naming a recycled pid).
pid_alive() {
  local pid comm
  [[ -s $1 ]] || return 1
  pid=$(<"$1")
  [[ $pid =~ ^[0-9]+$ ]] && alive "$pid" || return 1
  comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 1
  [[ $comm == "$2"* ]]
}

# kill_pids PID...: TERM, wait up to 10 s, then KILL what is left.
kill_pids() {
  local pid i left
  (( $# )) || return 0
  kill -TERM "$@" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    left=()
    for pid in "$@"; do
      if alive "$pid"; then left+=("$pid"); fi
    done
    (( ${#left[@]} )) || return 0
    sleep 0.1
  done
  log "still running after 10 s, sending KILL: ${left[*]}"
  kill -KILL "${left[@]}" 2>/dev/null || true
}

# Everything up and running? (processes, bridge, namespaces)
cluster_running() {
  local i
  pid_alive "$MUNGE_PID" munged || return 1
  pid_alive "$CTLD_PID" slurmctld || return 1
  ip link show "$BRIDGE" >/dev/null 2>&1 || return 1
  for ((i = 1; i <= NNODES; i++)); do
    [[ -e /var/run/netns/$(node_name "$i") ]] || return 1
    pid_alive "$(slurmd_pid_file "$(node_name "$i")")" slurmd || return 1
  done
}

# Serialise up/down: a second caller waits instead of racing. down run from up
# inherits the lock (GPUACCEPT_CLUSTER_LOCKED).
take_lock() {
  [[ -n ${GPUACCEPT_CLUSTER_LOCKED:-} ]] && return 0
  mkdir -p "$DIR"
  exec 9>"$DIR/.lock"
  flock -w 300 9 || die "another tests/cluster/up or down holds $DIR/.lock"
  export GPUACCEPT_CLUSTER_LOCKED=1
}
