// The GPU this rank uses: CUDA device local_rank % count (with CUDA_VISIBLE_DEVICES
// set per task by Slurm that is device 0), described once for every record and for
// the NVML queries. Without a usable GPU, `reason` says why and every GPU check SKIPs.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "hw/nvml.h"
#include "results/record.h"

namespace gpuaccept::smoke {

struct GpuDevice {
  int index = -1;    // CUDA index used; -1: none
  int node_index = -1;  // the same GPU on its node, as nvidia-smi numbers it (hw/node_gpu_index.h):
                        // what records name (Slurm's binding makes index 0 on every rank)
  int visible = 0;   // CUDA devices this rank sees
  std::string reason;  // why index is -1 ("no CUDA device: ...")
  std::string uuid, bus_id, name;
  int cc = 0;  // compute capability, major*10+minor
  int sms = 0;
  std::size_t l2_bytes = 0, memory_bytes = 0;
  std::vector<std::string> visible_uuids;
  std::optional<Nvml::Device> nvml;  // the same GPU in NVML
  std::string nvml_reason;           // why nvml is empty

  bool present() const { return index >= 0; }
};

// Picks and sets the device for this rank. Never throws for a missing GPU.
GpuDevice select_gpu(int local_rank);

// "GPU-2f4a...": the form NVML and nvidia-smi print.
std::string format_cuda_uuid(const cudaUUID_t& u);
// A record about `gpu` (gpu_index: its node_index; gpu_uuid).
Record gpu_record(const GpuDevice& gpu, const std::string& test);
// The NVML handle of the GPU with this CUDA PCI bus id.
std::optional<Nvml::Device> nvml_device_for_bus_id(const std::string& cuda_bus_id);
// The node index (hw/node_gpu_index.h) of the GPU at this CUDA PCI bus id; `cuda_index` the last
// resort.
int node_index_for_bus_id(const std::string& cuda_bus_id, const std::optional<Nvml::Device>& nvml, int cuda_index);

}  // namespace gpuaccept::smoke
