// The network interface NCCL's socket transport (NET/Socket) and its bootstrap use, and its
// speed: the line rate a declared Ethernet/TCP fabric (fabric.transport: tcp) is judged
// against. NCCL picks NCCL_SOCKET_IFNAME's first match where set ("eth0", "^docker,lo"
// excludes, "=eth0" exact), else an interface other than lo/docker (ib* first); the
// default route's interface stands for that here.
#pragma once

#include <string>

namespace gpuaccept {

struct SocketInterface {
  std::string name;   // "eth0"; "" when none was found
  double gbps = 0;    // /sys/class/net/<name>/speed (Mb/s) / 1000; 0 unknown (virtual NICs say -1)
};

// `proc_net_route`, `sys_class_net`: /proc/net/route and /sys/class/net (tests: fixtures).
SocketInterface socket_interface(const std::string& nccl_socket_ifname, const std::string& proc_net_route = "/proc/net/route",
                                 const std::string& sys_class_net = "/sys/class/net");

}  // namespace gpuaccept
