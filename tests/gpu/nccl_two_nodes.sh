#!/bin/bash
# nccl-scaling across two Slurm nodes on one GPU machine, so that the network path and the
# multi-node scales run without a second host. The local Slurm (tests/gpu/local_slurm.sh,
# GPU_NODES=2) runs two nodes, each in its own network namespace with its own hostname and
# half the machine's GPUs (tests/gpu/bind_node_gpus.sh); the ranks of a node give NCCL the
# node's name as NCCL_HOSTID, so NCCL uses NVLink/P2P inside a node and its network
# transport (sockets over the nodes' virtual Ethernet) between them. The phase must report
# the intra_node and inter_node scales separately, plus all GPUs and the node pair.
# On a machine with one GPU every rank drives that GPU with a host id of its own
# (tests/gpu/own_host_per_rank.sh), RANKS_PER_NODE [2] per node: the same multi-node code
# paths, every transport a socket, and a gpu_sharing FAIL saying the figures are not a GPU's.
# On the GPU machine, after source tests/gpu/env.sh:
#   tests/gpu/nccl_two_nodes.sh [extra phase flags]      (results and log under $OUT)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT/results"
export GPU_NODES=2
source tests/gpu/local_slurm.sh >"$OUT/slurm-2nodes.log" 2>&1 || { cat "$OUT/slurm-2nodes.log"; exit 1; }
trap 'tests/cluster/down >/dev/null 2>&1' EXIT
BIN=${GPUACCEPT_BIN:-$PWD/build/bin}
run=nccl-two-nodes
expect=(--record-status gpu_sharing=FAIL --except gpu_sharing)
if [ "$ngpu" -ge 2 ]; then
  export GPUACCEPT_GPUS_PER_NODE=$((ngpu / 2))
  per_node=$GPUACCEPT_GPUS_PER_NODE wrapper=$PWD/tests/gpu/bind_node_gpus.sh expect=()
  # Up to 64 MiB, float only: the inter-node path is sockets over a virtual Ethernet (a few
  # GB/s at best), where the full 8 GiB sweep of every collective would take hours.
  sizes=(-b 8 -e 64M -f 4 --dtypes float --pair-bytes 64M)
else
  per_node=${RANKS_PER_NODE:-2} wrapper=$PWD/tests/gpu/own_host_per_rank.sh
  sizes=(-b 8 -e 4M -f 8 --pair-bytes 4M --pair-outlier-pct 90)
fi
echo "=== nccl-scaling on 2 nodes x $per_node ranks ($wrapper)"
timeout --kill-after=10 550 srun -N2 --ntasks-per-node="$per_node" --mpi=pmix --kill-on-bad-exit=0 "$wrapper" \
  "$BIN/gpuaccept-nccl-scaling" --results "$OUT/results" --run-id "$run" "${sizes[@]}" --timeout 120 "$@" \
  >"$OUT/$run.log" 2>&1
rc=$?
grep -v '^\[.* r[1-9][0-9]*/' "$OUT/$run.log" | tail -n 60
echo "exit code $rc"
checks=()
# One GPU per node (a 2-GPU machine): no intra-node scale, and "all" is the inter-node one.
scales=(inter_node)
[ "$per_node" -ge 2 ] && scales+=(intra_node all)
for scale in "${scales[@]}"; do checks+=(--record "all_reduce PASS scale=$scale"); done
"$BIN/results-check" "$OUT/results/$run/nccl-scaling.h5" --phase nccl-scaling --complete yes \
  --document nccl_env "${checks[@]}" --record "pair_busbw PASS scale=node_pair" \
  --no-status FAIL --no-status ERROR "${expect[@]}" || { echo "nccl_two_nodes: FAILED"; exit 1; }
echo "nccl_two_nodes: ok"
