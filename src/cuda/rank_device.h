// Which GPU a rank drives: with Slurm's --gpus-per-task=1 each rank sees one GPU (device 0);
// otherwise local rank i takes GPU i (nccl-tests' localRank binding). Shared by the NCCL
// phases (nccl-scaling, ddp); never throws for a missing GPU, it says why instead.
#pragma once

#include <string>

#include "world/world.h"

namespace gpuaccept {

struct RankDevice {
  int index = -1;      // the CUDA device set current; -1: none
  int visible = 0;     // CUDA devices this process sees
  std::string name;    // "NVIDIA H200"
  std::string uuid;    // "GPU-5b3e...": tells two ranks on one GPU apart from two GPUs
  std::string pci_bus_id;  // "00000000:18:00.0"
  int node_index = -1;     // the GPU on its node, as nvidia-smi numbers it (hw/node_gpu_index.h):
                           // what records about it name; index where the driver lists no GPUs
  std::string reason;  // why index is -1: "no CUDA device: ...", or more ranks than GPUs on this node
};

// Picks the device, makes it current and reads its name. Throws CallError only when a CUDA
// call fails on a device that exists.
RankDevice choose_rank_device(const World& world);

}  // namespace gpuaccept
