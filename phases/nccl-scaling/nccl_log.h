// NCCL's own account of the transports it used, read back from its log rather than inferred
// from the hardware (plan.h's classify_transport predicts; this observes). NCCL logs, for every
// connection it makes (lazily, at the first collective that needs it since 2.22's
// NCCL_RUNTIME_CONNECT), a line such as
//   node1:4242:4250 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA
//   node1:4242:4250 [0] NCCL INFO Channel 01/0 : 1[1] -> 0[0] via P2P/CUMEM/read
//   node1:4242:4250 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [receive] via NET/Socket/0
// with NCCL_DEBUG=INFO and the INIT subsystem. The phase sets NCCL_DEBUG, NCCL_DEBUG_SUBSYS and
// NCCL_DEBUG_FILE (a file per rank in the node's temporary directory) before NCCL starts, unless
// the operator set NCCL_DEBUG or NCCL_DEBUG_FILE: then nothing is observed, and said so. NCCL's
// warnings go to that file too, so the phase copies them to the job log.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace gpuaccept::nccl_scaling {

// What the "via" lines of a stretch of log say, reduced to kinds:
//   "NET/IB/GDRDMA", "NET/IB" (no GPUDirect), "NET/Socket", "NET/<plugin>[/GDRDMA]", "P2P", "SHM".
struct ObservedTransports {
  std::set<std::string> kinds;
  std::vector<std::string> warnings;  // NCCL's WARN lines, as they stand
  std::string net_devices;            // the last "NET/IB : Using ..." or "NET/Socket : Using ..." line from "IB :" or "Socket :" on
  bool between_nodes() const;         // any NET/* kind
  bool over_sockets() const;          // NET/Socket
  bool ib_without_gdr() const;        // NET/IB without GDRDMA
};

ObservedTransports parse_nccl_log(std::string_view text);

// "via NET/IB/0(1)/GDRDMA" -> "NET/IB/GDRDMA"; "via P2P/CUMEM/read" -> "P2P"; "" if not a via line.
std::string transport_kind(std::string_view via);

// The log file of this process, set up before NCCL's first call; read_new() takes what came
// since its last call (the sweep reads it once, at its end: what every scale used).
class NcclLog {
 public:
  // `path`: where NCCL is to write; taken only if the operator set neither NCCL_DEBUG nor
  // NCCL_DEBUG_FILE.
  explicit NcclLog(std::string path);
  NcclLog(const NcclLog&) = delete;
  NcclLog& operator=(const NcclLog&) = delete;
  ~NcclLog();  // removes the file it set up

  bool observing() const { return why_not_.empty(); }
  const std::string& why_not() const { return why_not_; }
  const std::string& path() const { return path_; }
  // What NCCL wrote since the last call (whole lines only).
  ObservedTransports read_new();

 private:
  std::string path_;
  std::string why_not_;
  std::uint64_t offset_ = 0;
};

}  // namespace gpuaccept::nccl_scaling
