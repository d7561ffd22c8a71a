// How close two PCI functions (a GPU, a NIC) are on the node's PCI tree, in the words of
// `nvidia-smi topo -m`, from sysfs alone: /sys/bus/pci/devices/<bus id> links to the function's
// place under its root complex, e.g. /sys/devices/pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:00.0
// (root complex, root port, switch up-port, ..., the function). GPUDirect RDMA and NCCL's
// choice of NIC per GPU both follow this distance: a GPU sends through the NIC nearest to it.
#pragma once

#include <string>
#include <vector>

#include "hw/rdma_ports.h"

namespace gpuaccept {

// Closest first. Ours, from the tree (nvidia-smi's meaning in brackets):
//   Pix:  both hang off one PCIe switch (at most one switch between them)
//   Pxb:  below one root port, through more than one switch (several bridges, no host bridge)
//   Phb:  below one root complex, different root ports (through the host bridge)
//   Node: different root complexes of one NUMA node (or NUMA unknown)
//   Sys:  different NUMA nodes (across the CPUs' interconnect)
enum class PciDistance { Pix, Pxb, Phb, Node, Sys, Unknown };
const char* to_string(PciDistance d);

// "00000000:18:00.0" (NVML) or "0000:18:00.0" -> "0000:18:00.0", lower case.
std::string normalize_bus_id(const std::string& bus_id);

// The function's chain from its root complex: {"pci0000:17", "0000:17:01.0", ..., bus id};
// empty when sysfs does not know it. `pci_devices` is /sys/bus/pci/devices (tests: a fixture).
std::vector<std::string> pci_chain(const std::string& bus_id, const std::string& pci_devices = "/sys/bus/pci/devices");

PciDistance pci_distance(const std::vector<std::string>& a, int numa_a, const std::vector<std::string>& b, int numa_b);

struct GpuLocation {
  int index = -1;          // the GPU's index on its node (NVML's)
  std::string pci_bus_id;  // as NVML gives it
  int numa_node = -1;
};

// Sets each port's nearest_gpus (every GPU at the smallest distance) and gpu_distance.
void assign_nearest_gpus(std::vector<RdmaPort>& ports, const std::vector<GpuLocation>& gpus,
                         const std::string& pci_devices = "/sys/bus/pci/devices");

// The ports nearest to one GPU (indices into `ports`, every port at the smallest distance;
// only active ports count). Empty when there is no active port.
std::vector<std::size_t> ports_nearest_to(const GpuLocation& gpu, const std::vector<RdmaPort>& ports,
                                          const std::string& pci_devices = "/sys/bus/pci/devices");

}  // namespace gpuaccept
