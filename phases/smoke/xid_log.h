// XID errors from the kernel log. The NVIDIA driver reports GPU faults as lines like
//   NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python, GPU has fallen off the bus.
// NVML's XID events reach only a listener registered before they happen, so a health check
// that starts after the fault reads them from the kernel's ring buffer (/dev/kmsg, root),
// as DCGM and NHC's nvidia checks do. Only XIDs that mean a node must not take jobs fail it
// (critical_xid); the rest (an application's own fault: 13, 31, 43, 45) are reported.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuaccept::smoke {

struct XidEvent {
  std::string pci;  // "0000:18:00" as the driver prints it
  int xid = 0;
  std::string line;  // the whole message, for the reason
};

// Every Xid line in `log` (any kernel log text: dmesg's or /dev/kmsg's records).
std::vector<XidEvent> parse_xid_lines(std::string_view log);

// What the XID means when it must take the node out of service (from NVIDIA's XID catalogue:
// double-bit ECC, fallen off the bus, row-remap failure, NVLink, GSP and similar); nullopt
// for XIDs an application's own error produces.
std::optional<std::string_view> critical_xid(int xid);

// The kernel's ring buffer as text, read without blocking. `error` says why it could not be
// read (not root, a container without /dev/kmsg); then the text is empty.
std::string read_kernel_log(std::string& error);

}  // namespace gpuaccept::smoke
