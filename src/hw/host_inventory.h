// What a node is made of apart from its GPUs: CPUs and memory (hwloc), the kernel and this
// process's CPU affinity. Its RDMA ports: hw/rdma_ports.h.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpuaccept {

struct CpuInventory {
  std::string model;
  int sockets = 0, cores = 0, pus = 0, numa_nodes = 0;
  unsigned long long memory_bytes = 0;
};

CpuInventory read_cpu_inventory();  // hwloc; fields stay 0/"" when unknown
std::string kernel_release();
// What the kernel says can still be allocated without swapping: MemAvailable of `meminfo`
// (default /proc/meminfo), in bytes; 0 when the file or the line is missing or malformed.
unsigned long long memory_available_bytes(const std::string& meminfo = "/proc/meminfo");
// This process's allowed CPUs as a list: "0-3,8".
std::string cpu_affinity_list();
// Compresses sorted CPU ids into the list form: {0,1,2,3,8} -> "0-3,8".
std::string format_cpu_list(const std::vector<int>& cpus);

void to_json(nlohmann::json& j, const CpuInventory& c);

}  // namespace gpuaccept
