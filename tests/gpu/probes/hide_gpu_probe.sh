#!/bin/bash
# Probe (issue 37's two-node harness): can a mount namespace give a process only some of the
# machine's GPUs, as a container runtime does, so that two Slurm nodes on one machine each see
# only their own (NVML too, which smoke's slurm_gres compares with the GRES)? Hides GPU 1 from a
# shell in its own mount namespace (its device file bound to /dev/null, its /proc/driver/nvidia
# entry covered) and asks nvidia-smi and CUDA (through PyTorch) what they see.
#   tests/gpu/probes/hide_gpu_probe.sh       (on a GPU machine with 2 GPUs or more)
set -uo pipefail
nvidia-smi -L
ls /proc/driver/nvidia/gpus/
unshare --mount --propagation private bash -c '
  bus=$(ls /proc/driver/nvidia/gpus/ | sed -n 2p)
  echo "hiding /dev/nvidia1 and /proc/driver/nvidia/gpus/$bus"
  mount --bind /dev/null /dev/nvidia1 && mount -t tmpfs none "/proc/driver/nvidia/gpus/$bus"
  echo "nvidia-smi in the namespace:"; nvidia-smi -L
  python3 -c "import torch; print(\"CUDA devices in the namespace:\", torch.cuda.device_count(), [torch.cuda.get_device_properties(i).pci_bus_id for i in range(torch.cuda.device_count())])"
'
