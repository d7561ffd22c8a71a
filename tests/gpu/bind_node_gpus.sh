#!/bin/bash
# Used by tests/gpu/nccl_two_nodes.sh: the local Slurm runs two nodes on one GPU machine,
# each owning GPUACCEPT_GPUS_PER_NODE of its GPUs (node 0 the first half, node 1 the
# second). Each task drives its node's GPU number SLURM_LOCALID (as --gpus-per-task=1 would
# where Slurm schedules the GRES), and every rank of a node gives NCCL the node's name as
# NCCL_HOSTID, so NCCL takes the two nodes for two hosts: NVLink/P2P inside a node, its
# network transport between them.
per_node=${GPUACCEPT_GPUS_PER_NODE:?how many GPUs each node owns}
export CUDA_VISIBLE_DEVICES=$((${SLURM_NODEID:?not a Slurm task} * per_node + ${SLURM_LOCALID:?}))
export NCCL_HOSTID=${SLURMD_NODENAME:?not a Slurm task}
exec "$@"
