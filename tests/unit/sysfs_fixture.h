// A made-up sysfs tree for the RDMA port and PCI distance readers (hw/rdma_ports.h,
// hw/pci_distance.h), laid out as the kernel lays it out:
//   <root>/devices/pci0000:17/0000:17:01.0/0000:18:00.0/{numa_node, net/<ifname>/}   the PCI tree
//   <root>/bus/pci/devices/0000:18:00.0 -> ../../../devices/pci0000:17/...          one link per function
//   <root>/class/infiniband/mlx5_0/device -> the NIC's function
//   <root>/class/infiniband/mlx5_0/ports/1/{state, phys_state, rate, link_layer, counters/<name>}
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "fresh_dir.h"

namespace gpuaccept::testing {

class SysfsFixture {
 public:
  explicit SysfsFixture(const std::string& name) : root_(fresh_dir(name)) {}
  ~SysfsFixture() { std::filesystem::remove_all(root_); }

  std::string infiniband() const { return (root_ / "class/infiniband").string(); }
  std::string pci_devices() const { return (root_ / "bus/pci/devices").string(); }
  std::string modules() const { return (root_ / "module").string(); }

  // A PCI function at `chain` (root complex first, the function last), with its NUMA node.
  void pci_function(const std::vector<std::string>& chain, int numa = 0) {
    std::filesystem::path p = root_ / "devices";
    for (const auto& c : chain) p /= c;
    std::filesystem::create_directories(p);
    write(p / "numa_node", std::to_string(numa));
    std::filesystem::create_directories(root_ / "bus/pci/devices");
    const auto link = root_ / "bus/pci/devices" / chain.back();
    std::filesystem::remove(link);
    std::filesystem::create_directory_symlink(p, link);
  }

  // An RDMA device on the PCI function `chain` (see pci_function), with one port.
  void port(const std::string& dev, int port, const std::vector<std::string>& chain, const std::string& state = "4: ACTIVE",
            const std::string& phys = "5: LinkUp", const std::string& rate = "400 Gb/sec (4X NDR)",
            const std::string& layer = "InfiniBand", const std::map<std::string, unsigned long long>& counters = {}) {
    pci_function(chain, 0);
    const auto d = root_ / "class/infiniband" / dev;
    std::filesystem::create_directories(d);
    if (!std::filesystem::exists(d / "device")) std::filesystem::create_directory_symlink(root_ / "bus/pci/devices" / chain.back(), d / "device");
    const auto p = d / "ports" / std::to_string(port);
    std::filesystem::create_directories(p / "counters");
    write(p / "state", state);
    write(p / "phys_state", phys);
    write(p / "rate", rate);
    write(p / "link_layer", layer);
    for (const auto& [name, value] : counters) write(p / "counters" / name, std::to_string(value));
  }

  void counter(const std::string& dev, int port, const std::string& name, unsigned long long value) {
    write(root_ / "class/infiniband" / dev / "ports" / std::to_string(port) / "counters" / name, std::to_string(value));
  }

  void module(const std::string& name) { std::filesystem::create_directories(root_ / "module" / name); }

 private:
  std::filesystem::path root_;
  static void write(const std::filesystem::path& p, const std::string& text) { std::ofstream(p) << text << "\n"; }
};

}  // namespace gpuaccept::testing
