#!/bin/bash
# Diagnostic for the lent GPU machine: which gres.conf forms make the local Slurm
# (tests/cluster/up, one node) schedule the machine's first GPU. Prints, per variant,
# the node's Gres as slurmctld sees it and slurmd's GRES warnings.
cd "$(dirname "$0")/../../.." || exit 1
source tests/gpu/env.sh
export GPUACCEPT_CLUSTER_NODES=1 GPUACCEPT_CLUSTER_GRES=gpu:1
variants=("Name=gpu File=/dev/nvidia0" $'AutoDetect=off\nName=gpu File=/dev/nvidia0' "Name=gpu Count=1"
          "NodeName=gpa-node1 Name=gpu File=/dev/nvidia0" "")
for v in "${variants[@]}"; do
  export GPUACCEPT_CLUSTER_GRES_CONF_LINES="$v"
  tests/cluster/down >/dev/null 2>&1
  if exports=$(timeout 60 tests/cluster/up 2>/dev/null); then
    eval "$exports"
    echo "--- [${v//$'\n'/; }] -> $(scontrol show node gpa-node1 | grep -o 'Gres=[^ ]*')"
    grep -i -E "gres|gpu" "$GPUACCEPT_CLUSTER_DIR"/log/slurmd-gpa-node1.log | grep -v -i "plugin" | head -5
    srun -n1 --gpus-per-task=1 bash -c 'echo "    srun --gpus-per-task=1: CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"' 2>&1 | head -2
  else
    echo "--- [${v//$'\n'/; }] -> the cluster did not start"
  fi
done
tests/cluster/down >/dev/null 2>&1
