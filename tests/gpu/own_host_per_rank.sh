#!/bin/bash
# Used by tests/gpu/ranks_on_one_gpu.sh and nccl_two_nodes.sh on a machine with one GPU:
# every rank drives the same GPU (GPUACCEPT_SHARED_GPU, default 0) and tells NCCL it is a
# host of its own (NCCL_HOSTID), so that NCCL, which refuses two ranks of one host on one
# GPU, joins the ranks over its network transport (sockets, as between two hosts without
# InfiniBand; over the local cluster nodes' virtual Ethernet).
export CUDA_VISIBLE_DEVICES=${GPUACCEPT_SHARED_GPU:-0}
export NCCL_HOSTID="gpuaccept-rank-${SLURM_PROCID:?not a Slurm task}"
exec "$@"
