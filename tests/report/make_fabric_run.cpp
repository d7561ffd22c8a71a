// Writes a run directory of 3 nodes x 2 "NVIDIA H200" with the fabric data of issue 37
// (docs/fabric.md), for tests/report/fabric_test.sh:
//   discover.h5      inventories with the new port fields (rate_gbps, active, nearest_gpus,
//                    netdevs, ...) and gpudirect; fabric_ports, fabric_rate and gpudirect records
//   smoke.h5         a healthy bf16 GEMM per GPU
//   nccl-scaling.h5  all_reduce, all_gather, reduce_scatter across nodes (inter_node, all) with
//                    line_rate_gbps, line_rate_source and fabric; 8 B latency; nccl_transport;
//                    hca_loopback per node; pair_busbw node pairs
//   ddp.h5           scaling efficiency with `nodes`
// and in every phase each node's port_counters document. The third node's hostname and one of
// its ports carry markup, which the report must show as text.
// By default the fabric is broken as a report must catch it: NCCL went over sockets between
// nodes that have active RDMA ports (nccl_transport FAIL), so busbw across nodes is far below
// 0.8 x line rate and the 8 B latency is over its bound; gpa-node2's symbol_error rises during
// nccl-scaling; the node pair gpa-node2 - node3 is the slowest; ddp scales to 62% on 3 nodes.
// With --healthy every figure clears its bound and the only note is gpa-node1's link_downed
// going down between smoke and nccl-scaling (a reset: a WARN, never a FAIL).
// Usage: gpuaccept-fabric-run DIR [--healthy]
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "results/result_file.h"

using namespace gpuaccept;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kHosts = {"gpa-node1", "gpa-node2", "<b>gpa-node3</b>"};
constexpr int kGpusPerNode = 2;
constexpr int kRanks = 3 * kGpusPerNode;
const char* const kPhases[] = {"discover", "smoke", "nccl-scaling", "ddp"};
bool g_healthy = false;

// The third node's first HCA has markup in its name, as a hostile driver or udev rule could give it.
std::string device(int node, int index) {
  return node == 2 && index == 0 ? "mlx5_<i>0</i>" : fmt::format("mlx5_{}", index);
}

Record record(const std::string& phase, int node, int gpu, const std::string& test, const std::string& metric,
              double value, const std::string& unit, Params params, Status status = Status::Pass,
              std::string message = "") {
  Record r;
  r.phase = phase;
  r.job_id = "5151";
  r.rank = gpu < 0 ? kJobLevel : node * kGpusPerNode + gpu;
  r.node = node < 0 ? "" : kHosts[static_cast<std::size_t>(node)];
  r.gpu_index = gpu;
  r.gpu_uuid = gpu < 0 ? "" : fmt::format("GPU-{}-{}", node, gpu);
  r.test = test;
  r.metric = metric;
  r.value = value;
  r.unit = unit;
  r.params = std::move(params);
  r.status = status;
  r.message = std::move(message);
  return r;
}

ResultFile file_for(const std::string& phase, int index) {
  ResultFile f;
  f.attributes = {{"phase", phase},
                  {"tool_version", "0.1.0"},
                  {"git_commit", "fixture"},
                  {"start_time", fmt::format("2026-11-28T01:{:02}:00Z", 10 * index)},
                  {"end_time", fmt::format("2026-11-28T01:{:02}:00Z", 10 * index + 9)},
                  {"slurm_job_id", "5151"},
                  {"slurm_nodelist", "gpa-node[1-3]"},
                  {"world_size", std::to_string(kRanks)},
                  {"hosts", fmt::format("{},{},{}", kHosts[0], kHosts[1], kHosts[2])},
                  {"complete", "yes"}};
  return f;
}

// A node's counters at one reading: symbol_error and link_downed of both ports, plus the
// congestion counter the report leaves alone.
json counters(int node, std::uint64_t symbol_error, std::uint64_t link_downed) {
  json ports = json::object();
  for (int i = 0; i < 2; ++i)
    ports[device(node, i) + "/1"] = {{"symbol_error", i == 0 ? symbol_error : 0},
                                     {"link_downed", i == 0 ? link_downed : 0},
                                     {"port_rcv_errors", 0},
                                     {"port_xmit_discards", 1000 * (i + 1)}};
  return ports;
}

// The port_counters documents of one phase: local rank 0 of each node, "" for the others.
std::vector<std::string> counter_documents(const std::string& phase, int index) {
  std::vector<std::string> docs(kRanks);
  for (int node = 0; node < 3; ++node) {
    std::uint64_t start_se = 0, end_se = 0, start_ld = 0, end_ld = 0;
    if (!g_healthy && node == 1) {  // gpa-node2: symbol errors during nccl-scaling
      start_se = index <= 2 ? 3 : 17;
      end_se = index < 2 ? 3 : 17;
    }
    if (g_healthy && node == 0) start_ld = end_ld = index < 2 ? 1 : 0;  // gpa-node1 rebooted after smoke
    docs[static_cast<std::size_t>(node * kGpusPerNode)] =
        json{{"host", kHosts[static_cast<std::size_t>(node)]},
             {"phase", phase},
             {"start_time", fmt::format("2026-11-28T01:{:02}:00Z", 10 * index)},
             {"end_time", fmt::format("2026-11-28T01:{:02}:00Z", 10 * index + 9)},
             {"start", counters(node, start_se, start_ld)},
             {"end", counters(node, end_se, end_ld)}}
            .dump();
  }
  return docs;
}

json inventory(int rank) {
  const int node = rank / kGpusPerNode;
  json gpus = json::array();
  for (int i = 0; i < kGpusPerNode; ++i)
    gpus.push_back({{"nvml_index", i}, {"name", "NVIDIA H200"}, {"uuid", fmt::format("GPU-{}-{}", node, i)}});
  json ports = json::array();
  for (int i = 0; i < 2; ++i)
    ports.push_back({{"device", device(node, i)},
                     {"port", 1},
                     {"state", "4: ACTIVE"},
                     {"phys_state", "5: LinkUp"},
                     {"rate", "400 Gb/sec (4X NDR)"},
                     {"rate_gbps", 400},
                     {"link_layer", "InfiniBand"},
                     {"pci_bus_id", fmt::format("0000:{:02x}:00.0", 0x18 + 0x40 * i)},
                     {"numa_node", i},
                     {"netdevs", json::array({fmt::format("ibp{}s0", 24 + 64 * i)})},
                     {"nearest_gpus", json::array({i})},
                     {"gpu_distance", "PIX"},
                     {"active", true}});
  return {{"rank", rank},
          {"local_rank", rank % kGpusPerNode},
          {"host", kHosts[static_cast<std::size_t>(node)]},
          {"gpus", {{"driver_version", "575.57.08"}, {"node_gpus", gpus}}},
          {"infiniband", ports},
          {"gpudirect", {{"peermem", true}, {"dmabuf", true}, {"possible", true}, {"detail", "nvidia_peermem loaded"}}},
          {"versions", {{"nccl", "2.28.3"}}}};
}

void write_discover(const fs::path& dir) {
  ResultFile f = file_for("discover", 0);
  for (int rank = 0; rank < kRanks; ++rank) f.documents["inventory"].push_back(inventory(rank).dump());
  f.documents["port_counters"] = counter_documents("discover", 0);
  for (int node = 0; node < 3; ++node) {
    const std::string ports = fmt::format("{}/1, {}/1", device(node, 0), device(node, 1));
    f.records.push_back(record("discover", node, -1, "fabric_ports", "active_ports", 2, "count",
                               {{"expected", "2"}, {"source", "one per GPU"}}, Status::Pass,
                               fmt::format("2 active ports ({}), 2 expected (one per GPU)", ports)));
    f.records.push_back(record("discover", node, -1, "fabric_rate", "min_rate_gbps", 400, "Gb/s",
                               {{"expected_gbps", "400"}}, Status::Pass, "every active port at 400 Gb/s, the fleet's"));
    f.records.push_back(record("discover", node, -1, "gpudirect", "possible", 1, "count",
                               {{"peermem", "true"}, {"dmabuf", "true"}}, Status::Pass, "nvidia_peermem loaded"));
  }
  write_result_file(dir / "discover.h5", f);
}

void write_smoke(const fs::path& dir) {
  ResultFile f = file_for("smoke", 1);
  f.documents["port_counters"] = counter_documents("smoke", 1);
  for (int node = 0; node < 3; ++node)
    for (int gpu = 0; gpu < kGpusPerNode; ++gpu)
      f.records.push_back(record("smoke", node, gpu, "gemm", "tflops", 690, "TFLOP/s",
                                 {{"dtype", "bf16"}, {"m", "8192"}, {"n", "8192"}, {"k", "8192"}}));
  write_result_file(dir / "smoke.h5", f);
}

Params across(const std::string& bytes, const std::string& scale, const std::string& transport) {
  const bool all = scale == "all";
  return {{"bytes", bytes},
          {"dtype", "float"},
          {"inplace", "0"},
          {"scale", scale},
          {"ranks", all ? "6" : "3"},
          {"transport", transport},
          // inter_node: one GPU a node, its nearest port; all: both ports of the node.
          {"line_rate_gbps", all ? "800" : "400"},
          {"line_rate_source", "ports"},
          {"fabric", "infiniband"}};
}

void write_nccl(const fs::path& dir) {
  ResultFile f = file_for("nccl-scaling", 2);
  f.documents["port_counters"] = counter_documents("nccl-scaling", 2);
  const std::string transport = g_healthy ? "NET/IB/GDRDMA" : "NET/Socket";
  for (const char* test : {"all_reduce", "all_gather", "reduce_scatter"})
    for (const char* scale : {"inter_node", "all"})
      for (int i = 0; i < 5; ++i) {  // 64 MiB .. 1 GiB
        const std::string bytes = std::to_string((1ULL << 26) << i);
        const double line_gbytes = std::string(scale) == "all" ? 100 : 50;
        // Healthy: 92% of the line rate at the largest sizes; over sockets about 3 GB/s.
        const double busbw = g_healthy ? line_gbytes * (0.80 + 0.03 * i) : 2.6 + 0.1 * i;
        f.records.push_back(record("nccl-scaling", -1, -1, test, "busbw", busbw, "GB/s", across(bytes, scale, transport)));
      }
  for (const char* scale : {"inter_node", "all"}) {
    Params p = across("8", scale, transport);
    f.records.push_back(record("nccl-scaling", -1, -1, "all_reduce", "time", g_healthy ? 24.5 : 180.0, "us", p));
    p["inplace"] = "1";
    f.records.push_back(record("nccl-scaling", -1, -1, "all_reduce", "time", g_healthy ? 23.9 : 176.0, "us", p));
    const std::string hosts = fmt::format("{},{},{}", kHosts[0], kHosts[1], kHosts[2]);
    f.records.push_back(
        g_healthy
            ? record("nccl-scaling", -1, -1, "nccl_transport", "", NAN, "",
                     {{"scale", scale}, {"observed", "NET/IB/GDRDMA+P2P"}, {"hosts_socket", ""}}, Status::Pass,
                     "NCCL used NET/IB/GDRDMA between nodes")
            : record("nccl-scaling", -1, -1, "nccl_transport", "", NAN, "",
                     {{"scale", scale}, {"observed", "NET/Socket+P2P"}, {"hosts_socket", hosts}}, Status::Fail,
                     fmt::format("NCCL's log shows NET/Socket between nodes on {}, which have active RDMA ports", hosts)));
  }
  for (int node = 0; node < 3; ++node)
    f.records.push_back(record("nccl-scaling", node, -1, "hca_loopback", "busbw", 91.0, "GB/s",
                               {{"line_rate_gbps", "800"}, {"bytes", "268435456"}, {"fraction", "0.8"}}, Status::Pass,
                               "91.0 GB/s >= 0.8 x 800 Gb/s through the node's HCAs"));
  const struct {
    int a, b;
    double busbw;
  } pairs[] = {{0, 1, 92.0}, {0, 2, 91.0}, {1, 2, g_healthy ? 90.5 : 21.0}};
  for (const auto& p : pairs) {
    const bool slow = p.busbw < 50;
    f.records.push_back(record("nccl-scaling", -1, -1, "pair_busbw", "busbw", p.busbw, "GB/s",
                               {{"scale", "node_pair"},
                                {"a", kHosts[static_cast<std::size_t>(p.a)]},
                                {"b", kHosts[static_cast<std::size_t>(p.b)]},
                                {"bytes", "268435456"},
                                {"dtype", "float"},
                                {"ranks", "4"},
                                {"transport", transport}},
                               slow ? Status::Fail : Status::Pass,
                               slow ? "21.0 GB/s is 77% below the median 91.5 of the node pairs (limit 15%)" : ""));
  }
  write_result_file(dir / "nccl-scaling.h5", f);
}

void write_ddp(const fs::path& dir) {
  ResultFile f = file_for("ddp", 3);
  f.documents["port_counters"] = counter_documents("ddp", 3);
  f.records.push_back(record("ddp", -1, -1, "scaling", "efficiency", 94.0, "%",
                             {{"from", "single_gpu"}, {"to", "node"}, {"gpus", "2"}, {"nodes", "3"}}));
  f.records.push_back(record("ddp", -1, -1, "scaling", "efficiency", g_healthy ? 91.0 : 62.0, "%",
                             {{"from", "single_gpu"}, {"to", "all"}, {"gpus", "6"}, {"nodes", "3"}}));
  write_result_file(dir / "ddp.h5", f);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIR [--healthy]\n", argv[0]);
    return 2;
  }
  const fs::path dir = argv[1];
  g_healthy = argc > 2 && std::string(argv[2]) == "--healthy";
  fs::create_directories(dir);
  write_discover(dir);
  write_smoke(dir);
  write_nccl(dir);
  write_ddp(dir);
  std::printf("%s\n", dir.c_str());
  return 0;
}
