# shellcheck shell=bash
# Sourced by the GPU scripts (tests/gpu/run, ddp_vs_torch.sh, ...) on the GPU machine, after
# tests/gpu/env.sh: starts the local Slurm (tests/cluster/up) as one node whose GRES are
# this machine's GPUs (GPU_NODES=2: two nodes, each with half of them; with one GPU, each
# with that one), and sets
#   ngpu   the GPUs nvidia-smi lists
#   bind   how srun gives each task its own GPU: --gpus-per-task=1 where Slurm schedules the
#          GRES (it does since 2026-11-25: docs/gpu-tests.md, "Slurm binds the GPUs"), else
#          tests/gpu/bind_local_gpu.sh (by SLURM_LOCALID)
# Run from the repository root. tests/cluster/down stops it again.
# Every node of the local cluster mounts its own private /tmp: what a job writes under /tmp
# stays in that node's overlay and never reaches the caller's results or $OUT.
case ${OUT:-} in /tmp | /tmp/*)
  echo "gpu: OUT=$OUT is under /tmp, which each Slurm node of the local cluster mounts privately; choose another directory" >&2
  return 1 2>/dev/null || exit 1 ;;
esac
nvidia-smi -L
ngpu=$(nvidia-smi -L | grep -c '^GPU')
nvidia-smi topo -m 2>/dev/null | head -n $((ngpu + 2))
gpu_nodes=${GPU_NODES:-1}
per_node=$((ngpu / gpu_nodes > 0 ? ngpu / gpu_nodes : 1))
GPUACCEPT_CLUSTER_GRES_CONF_LINES=""
for ((i = 1; i <= gpu_nodes; i++)); do
  first=$(((i - 1) * per_node % ngpu))
  GPUACCEPT_CLUSTER_GRES_CONF_LINES+="NodeName=gpa-node$i Name=gpu File=/dev/nvidia[$first-$((first + per_node - 1))]"$'\n'
done
export GPUACCEPT_CLUSTER_NODES=$gpu_nodes GPUACCEPT_CLUSTER_GRES="gpu:$per_node" GPUACCEPT_CLUSTER_GRES_CONF_LINES
# Several nodes on one machine: each node's slurmd (and so its jobs) sees only its own GPUs, the
# others hidden in its mount namespace as a container runtime hides them (tests/cluster/up,
# GPUACCEPT_CLUSTER_NODE_GPUS). Without it Slurm numbers every node's GPUs from 0 and nothing
# isolates the devices: both nodes drove GPU 0, and NVML showed each node all the machine's GPUs.
if ((gpu_nodes > 1)); then
  GPUACCEPT_CLUSTER_NODE_GPUS=""
  for ((i = 1; i <= gpu_nodes; i++)); do
    first=$(((i - 1) * per_node % ngpu))
    GPUACCEPT_CLUSTER_NODE_GPUS+="${GPUACCEPT_CLUSTER_NODE_GPUS:+;}$(seq -s, "$first" $((first + per_node - 1)))"
  done
  export GPUACCEPT_CLUSTER_NODE_GPUS
fi
# slurmd's GRES debugging into its log, for when a machine's GPUs do not register.
export GPUACCEPT_CLUSTER_DEBUG_FLAGS=${GPUACCEPT_CLUSTER_DEBUG_FLAGS:-Gres}
GPUACCEPT_CLUSTER_CPUS=$(nproc)
GPUACCEPT_CLUSTER_MEM=$(($(free -m | awk '/Mem:/{print $2}') / 2))
export GPUACCEPT_CLUSTER_CPUS GPUACCEPT_CLUSTER_MEM
if ! exports=$(tests/cluster/up); then
  echo "gpu: the local Slurm did not start; logs:" >&2
  tail -n 30 /var/tmp/gpuaccept-cluster/log/*.log >&2
  return 1 2>/dev/null || exit 1
fi
eval "$exports"
sinfo -N -o '%N %G %c %m %T'
if ! sinfo -h -N -o '%G' | grep -q gpu; then
  echo "gpu: Slurm sees no GPU GRES; diagnostics:" >&2
  cat "$GPUACCEPT_CLUSTER_DIR/etc/gres.conf" "$GPUACCEPT_CLUSTER_DIR/etc/slurm.conf" >&2
  grep -i gres "$GPUACCEPT_CLUSTER_DIR"/log/slurmctld.log >&2
  grep -i -E 'gres|gpu|error' "$GPUACCEPT_CLUSTER_DIR"/log/slurmd-*.log | tail -n 60 >&2
  scontrol show node | grep -i -E 'gres|NodeName|Reason' >&2
  # The daemons' whole logs, to find out why.
  [ -n "${OUT:-}" ] && mkdir -p "$OUT/cluster-log" && cp "$GPUACCEPT_CLUSTER_DIR"/log/*.log "$OUT/cluster-log/" 2>/dev/null
fi
# shellcheck disable=SC2034  # for the scripts that source this file
bind=(--gpus-per-task=1)
if ! sinfo -h -N -o '%G' | grep -q gpu; then
  echo "gpu: no GPU GRES in Slurm: binding one GPU per task by SLURM_LOCALID instead" >&2
  # shellcheck disable=SC2034
  bind=(tests/gpu/bind_local_gpu.sh)
fi
