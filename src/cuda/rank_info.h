// What each rank found about its GPU, exchanged once through World (as JSON), and the one
// rule about ranks that share a GPU. Used by every phase whose ranks talk over NCCL
// (nccl-scaling, ddp).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpuaccept {

// An active RDMA port nearest to a rank's GPU (hw/pci_distance.h): the one its traffic to
// other nodes leaves through.
struct NearPort {
  std::string name;        // "mlx5_0/1"
  double gbps = 0;         // line rate, Gb/s
  std::string link_layer;  // "InfiniBand" or "Ethernet" (RoCE)
};

// What the hardware says about a rank's GPU links (NVML, sysfs): nccl-scaling predicts
// NCCL's transport from it, and the line rate its traffic between nodes can reach.
struct RankLinks {
  bool known = false;                // NVML described this rank's GPU
  int nvml_index = -1;               // the GPU's index on its node; -1 unknown
  bool nvswitch = false;             // an active NVLink to an NVSwitch (reaches every GPU on it)
  std::vector<int> nvlink_peers;     // nvml indices of GPUs wired to this one directly
  bool ib = false;                   // the node has an active InfiniBand/RoCE port (that NCCL_IB_HCA allows)
  std::vector<NearPort> nearest_ports;  // the active ports nearest to the GPU, equally near
  bool gdr_possible = false;         // GPUDirect RDMA possible for this GPU (hw/gpudirect.h)
  double ethernet_gbps = 0;          // speed of the interface NCCL's sockets would use; 0 unknown
};

struct RankInfo {
  std::string host;
  std::string nccl_host_id;  // NCCL_HOSTID where set: NCCL's idea of the host, else the hostname
  std::string error;         // non-empty: this rank cannot take part (no device, ...)
  int device = -1;
  int node_index = -1;  // the GPU on its node, as nvidia-smi numbers it (hw/node_gpu_index.h); -1 unknown
  std::string name, uuid, pci_bus_id;
  std::size_t mem_free = 0, mem_total = 0;
  RankLinks links;
};

void to_json(nlohmann::json& j, const RankInfo& r);
void from_json(const nlohmann::json& j, RankInfo& r);
void to_json(nlohmann::json& j, const NearPort& p);
void from_json(const nlohmann::json& j, NearPort& p);

// Ranks on one GPU. NCCL refuses two ranks of one host on one GPU ("Duplicate GPU
// detected" at init); that is a binding fault, named in `refused`. Ranks that set distinct
// NCCL_HOSTID values NCCL takes for separate hosts and joins over its network transport
// (tests/gpu/ranks_on_one_gpu.sh does this to run the multi-rank paths on one GPU): the
// phase can run, but its figures are not the GPU's or its links', said in `joined`.
struct GpuSharing {
  std::string refused;
  std::string joined;
};
GpuSharing find_gpu_sharing(const std::vector<RankInfo>& ranks);

}  // namespace gpuaccept
