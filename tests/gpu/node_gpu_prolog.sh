#!/bin/bash
# Slurm's TaskProlog for the local cluster when it runs several nodes on one GPU machine
# (tests/gpu/local_slurm.sh with GPU_NODES >= 2). Each node's gres.conf names its own device
# files (gpa-node2: /dev/nvidia1), but Slurm numbers a node's GPUs from 0 in the task's
# CUDA_VISIBLE_DEVICES, and without cgroups nothing hides the other GPUs: on gpa-node2, "0" is
# the machine's GPU 0, which gpa-node1 drives too, so both nodes measured one GPU at half
# speed. This prints the task's CUDA_VISIBLE_DEVICES shifted to the node's own GPUs:
# gpa-nodeN owns GPUs (N-1)*per_node .. N*per_node-1, per_node in GPUACCEPT_PROLOG_GPUS_PER_NODE
# of the file beside this one that local_slurm.sh writes (node_gpu_prolog.conf).
conf=$(dirname "$0")/node_gpu_prolog.conf
per_node=$(cat "$conf" 2>/dev/null) || exit 0
n=${SLURMD_NODENAME#gpa-node}
ids=${CUDA_VISIBLE_DEVICES:-${SLURM_STEP_GPUS:-}}
[[ $n =~ ^[0-9]+$ && $per_node =~ ^[0-9]+$ && -n $ids ]] || exit 0
first=$(((n - 1) * per_node))
out=()
IFS=, read -ra local_ids <<<"$ids"
for i in "${local_ids[@]}"; do
  [[ $i =~ ^[0-9]+$ ]] || exit 0  # UUIDs or anything else: leave it as Slurm set it
  out+=("$((first + i))")
done
echo "export CUDA_VISIBLE_DEVICES=$(IFS=,; echo "${out[*]}")"
