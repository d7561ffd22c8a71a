#include "hw/host_inventory.h"

#include <sched.h>
#include <unistd.h>
#include <sys/utsname.h>

#include <algorithm>
#include <fstream>
#include <limits>

#include <fmt/format.h>
#include <hwloc.h>

namespace gpuaccept {

CpuInventory read_cpu_inventory() {
  CpuInventory c;
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) return c;
  if (hwloc_topology_load(topo) == 0) {
    c.sockets = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
    c.cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    c.pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    c.numa_nodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    if (hwloc_obj_t pkg = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, 0))
      if (const char* m = hwloc_obj_get_info_by_name(pkg, "CPUModel")) c.model = m;
    // hwloc counts the memory of the NUMA nodes it could read; the kernel's page
    // count is the figure an operator compares with the datasheet.
    c.memory_bytes = static_cast<unsigned long long>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  }
  hwloc_topology_destroy(topo);
  return c;
}

std::string kernel_release() {
  utsname u{};
  return uname(&u) == 0 ? fmt::format("{} {}", u.sysname, u.release) : "";
}

unsigned long long memory_available_bytes(const std::string& meminfo) {
  std::ifstream in(meminfo);
  std::string key, unit;
  unsigned long long kib = 0;
  // "MemAvailable:   123456 kB", one field a line.
  while (in >> key) {
    if (key == "MemAvailable:") {
      if (in >> kib >> unit && unit == "kB") return kib * 1024ull;
      return 0;
    }
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return 0;
}

std::string format_cpu_list(const std::vector<int>& cpus) {
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j == i ? fmt::format("{}", cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]);
    i = j + 1;
  }
  return out;
}

std::string cpu_affinity_list() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return "";
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return format_cpu_list(cpus);
}

void to_json(nlohmann::json& j, const CpuInventory& c) {
  j = {{"model", c.model},     {"sockets", c.sockets},       {"cores", c.cores},
       {"pus", c.pus},         {"numa_nodes", c.numa_nodes}, {"memory_bytes", c.memory_bytes}};
}

}  // namespace gpuaccept
