#!/bin/bash
# Used by tests/gpu/run only when the local Slurm does not schedule GPU GRES: gives task
# SLURM_LOCALID its own GPU as --gpus-per-task=1 would (CUDA_VISIBLE_DEVICES), so the
# phases still run one rank per GPU. The phases record that Slurm assigned no GPU.
export CUDA_VISIBLE_DEVICES=${SLURM_LOCALID:?not a Slurm task}
exec "$@"
