// Writes a run whose every string the report shows comes from the cluster and is hostile
// (issue 18, "strings from the cluster are inert"): hostnames, GPU names and UUIDs, kernel
// and driver versions in the inventories, test names, metrics, units, params keys and values,
// messages, file attributes (config text, paths, the node list), and a threshold file whose
// rule names and bases are hostile too. Each string is drawn from a seeded generator mixing
// markup with a unique marker (<hostile-17 onmouseover=...>), quotes, ampersands, control
// characters, invalid UTF-8, CDATA and comment ends, and 10 kB runs. The fabric's data (issue 37:
// ports, port counters, a transport, a busbw against its line rate, a node pair) is hostile too.
// tests/report/hostile_strings_test.py runs the report on it and parses what it wrote.
// Usage: gpuaccept-hostile-run DIR SEED     (writes DIR/run/*.h5 and DIR/thresholds.yaml)
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "results/result_file.h"

using namespace gpuaccept;
namespace fs = std::filesystem;

namespace {

std::mt19937_64 g_rng;
int g_marker = 0;

std::string pick(std::initializer_list<const char*> options) {
  std::uniform_int_distribution<std::size_t> d(0, options.size() - 1);
  return *(options.begin() + d(g_rng));
}

// One hostile string; always carries a marker tag the checker must never see as a tag.
std::string hostile() {
  const int id = ++g_marker;
  std::string s = fmt::format("<hostile-{} onmouseover=\"alert({})\">", id, id);
  std::uniform_int_distribution<int> parts(1, 6);
  for (int i = parts(g_rng); i > 0; --i) {
    s += pick({"<script>alert(1)</script>", "\"'", "&amp;&lt;", "& ; &#x", "]]>", "-->", "<!--", "\x01\x02\x1b[31m",
               "\t\r\n", "\xff\xfe", "\xc3", "\xe2\x82", "\xed\xa0\x80", "caf\xc3\xa9", "\xf0\x9f\x98\x80", "</td></tr>",
               "{{\"json\": 1}}", "\\u0000", "${HOME}", "$(reboot)", "`id`", "' OR 1=1 --", "%s%n%x",
               "javascript:alert(1)", "<img src=x onerror=alert(1)>", "<svg/onload=alert(1)>"});
  }
  if (std::uniform_int_distribution<int>(0, 9)(g_rng) == 0) s += std::string(10000, 'A') + "<b>";
  return s + fmt::format("</hostile-{}>", id);
}

Record record(const std::string& phase, const std::string& node, int gpu, const std::string& test,
              const std::string& metric, double value) {
  Record r;
  r.phase = phase;
  r.job_id = hostile();
  r.rank = gpu < 0 ? kJobLevel : gpu;
  r.node = node;
  r.gpu_index = gpu;
  r.gpu_uuid = gpu < 0 ? "" : hostile();
  r.test = test;
  r.metric = metric;
  r.value = value;
  r.unit = hostile();
  r.params = {{"dtype", "bf16"}, {"m", "8192"}, {"n", "8192"}, {"k", "8192"}, {hostile(), hostile()}};
  r.message = hostile();
  return r;
}

ResultFile file_for(const std::string& phase, const std::vector<std::string>& nodes) {
  ResultFile f;
  f.attributes = {{"phase", phase},         {"tool_version", hostile()},   {"git_commit", hostile()},
                  {"start_time", hostile()}, {"slurm_job_id", hostile()},   {"slurm_nodelist", hostile()},
                  {"world_size", "4"},      {"hosts", nodes[0] + "," + nodes[1]},
                  {"config_path", hostile()}, {"config", hostile()},        {"slurm_cluster", hostile()},
                  {"complete", "yes"}};
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s DIR SEED\n", argv[0]);
    return 2;
  }
  g_rng.seed(std::stoull(argv[2]));
  const fs::path dir = fs::path(argv[1]) / "run";
  fs::create_directories(dir);
  const std::vector<std::string> nodes = {hostile(), hostile()};

  ResultFile discover = file_for("discover", nodes);
  for (int rank = 0; rank < 4; ++rank) {
    const std::string& host = nodes[rank / 2];
    nlohmann::json gpus = nlohmann::json::array();
    for (int i = 0; i < 2; ++i)
      gpus.push_back({{"nvml_index", i}, {"cuda_index", i}, {"node_index", i}, {"name", "NVIDIA H200"},
                      {"uuid", hostile()}, {"memory_bytes", 150754820096ULL}, {"compute_capability", hostile()},
                      {"nvlinks", nlohmann::json::array()}, {"power_limit_w", 700.0},
                      // A board NVML names oddly: the floors' "not applied" reason quotes it.
                      {"form_factor", i == 0 ? std::string("SXM") : hostile()}});
    const nlohmann::json inv = {{"rank", rank}, {"local_rank", rank % 2}, {"host", host}, {"kernel", hostile()},
                                {"cpu", {{"model", hostile()}, {"sockets", 2}, {"cores", 96}}},
                                {"gpus", {{"driver_version", hostile()}, {"cuda_driver_version", hostile()},
                                          {"node_gpus", gpus}, {"visible", nlohmann::json::array({gpus[rank % 2]})}}},
                                {"versions", {{"nccl", hostile()}, {"slurm", hostile()}}},
                                // The fabric's port fields (issue 37), each from the cluster.
                                {"infiniband", nlohmann::json::array({{{"device", hostile()}, {"port", hostile()},
                                                                       {"state", hostile()}, {"phys_state", hostile()},
                                                                       {"rate", hostile()}, {"rate_gbps", 400},
                                                                       {"link_layer", hostile()}, {"pci_bus_id", hostile()},
                                                                       {"netdevs", nlohmann::json::array({hostile()})},
                                                                       {"nearest_gpus", nlohmann::json::array({0})},
                                                                       {"gpu_distance", hostile()}, {"active", false}}})},
                                {"gpudirect", {{"possible", false}, {"detail", hostile()}}}};
    discover.documents["inventory"].push_back(inv.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  for (const auto& n : nodes) discover.records.push_back(record("discover", n, -1, hostile(), "gpus", 2));
  write_result_file(dir / "discover.h5", discover);

  ResultFile smoke = file_for("smoke", nodes);
  for (const auto& n : nodes)
    for (int g = 0; g < 2; ++g) {
      Record gemm = record("smoke", n, g, "gemm", "tflops", 700 + g);
      smoke.records.push_back(gemm);
      Record bad = record("smoke", n, g, hostile(), hostile(), NAN);
      bad.status = g == 0 ? Status::Fail : Status::Error;
      smoke.records.push_back(bad);
    }

  // A training checkpoint drill (one job), for the checkpoint part of ddp's details: its table
  // row and its bar per node.
  ResultFile ddp = file_for("ddp", nodes);
  for (const auto& n : nodes) {
    Record save = record("ddp", n, 0, "checkpoint_save", "write_bandwidth", 2);
    save.params["step"] = hostile();
    ddp.records.push_back(save);
    ddp.records.push_back(record("ddp", n, -1, "checkpoint_save", "node_write_bandwidth", 4));
  }
  ddp.records.push_back(record("ddp", "", -1, "checkpoint_efficiency", "write_vs_sequential", 90));
  for (const char* test : {"checkpoint_save", "checkpoint_restore", "checkpoint_resume"})
    ddp.records.push_back(record("ddp", "", -1, test, "", NAN));
  const std::string job = hostile();
  for (auto& r : ddp.records) r.job_id = job;

  // The fabric (issue 37, docs/fabric.md): port counters that rise on a hostile port in smoke and
  // ddp, a transport, a busbw across nodes judged against its line rate, and a node pair.
  const std::string port = hostile();
  for (auto* file : {&smoke, &ddp}) {
    const bool first = file == &smoke;
    for (int rank = 0; rank < 4; ++rank) {
      const nlohmann::json doc = {{"host", nodes[rank / 2]},
                                  {"start", {{port, {{"symbol_error", first ? 1 : 5}}}}},
                                  {"end", {{port, {{"symbol_error", 5}}}}}};
      file->documents["port_counters"].push_back(
          rank % 2 ? "" : doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    }
  }
  write_result_file(dir / "smoke.h5", smoke);
  write_result_file(dir / "ddp.h5", ddp);
  ResultFile nccl = file_for("nccl-scaling", nodes);
  Record transport = record("nccl-scaling", "", -1, "nccl_transport", "", NAN);
  transport.params = {{"scale", "inter_node"}, {"observed", hostile()}, {"hosts_socket", nodes[0] + "," + nodes[1]}};
  transport.status = Status::Fail;
  nccl.records.push_back(transport);
  Record busbw = record("nccl-scaling", "", -1, "all_reduce", "busbw", 3);
  busbw.params = {{"bytes", "268435456"}, {"scale", "inter_node"}, {"line_rate_gbps", "400"},
                  {"line_rate_source", hostile()}, {"fabric", hostile()}, {"ranks", hostile()}};
  nccl.records.push_back(busbw);
  Record pair = record("nccl-scaling", "", -1, "pair_busbw", "busbw", 2);
  pair.params = {{"scale", "node_pair"}, {"a", nodes[0]}, {"b", nodes[1]}, {"bytes", hostile()}};
  nccl.records.push_back(pair);
  write_result_file(dir / "nccl-scaling.h5", nccl);

  // A threshold file (YAML, double-quoted scalars with escapes) whose names and bases are hostile.
  const auto yaml_quote = [](const std::string& s) {
    std::string out = "\"";
    for (unsigned char c : s) {
      if (c == '"' || c == '\\') out += {'\\', static_cast<char>(c)};
      else if (c < 0x20 || c >= 0x80) out += fmt::format("\\x{:02x}", c);  // YAML reads it as that code point
      else out += static_cast<char>(c);
    }
    return out + "\"";
  };
  std::ofstream t(fs::path(argv[1]) / "thresholds.yaml");
  t << "description: " << yaml_quote(hostile()) << "\nmodels:\n  - NVIDIA H200\n"
    << "gpu: {sku: " << yaml_quote(hostile()) << ", form_factor: SXM, power_limit_w: 700}\nrules:\n";
  t << "  - name: " << yaml_quote(hostile()) << "\n    phase: smoke\n    test: gemm\n    metric: tflops\n"
    << "    min: 750\n    basis: " << yaml_quote(hostile()) << "\n    severity: FAIL\n";
  t << "  - name: " << yaml_quote(hostile()) << "\n    phase: smoke\n    test: gemm\n    metric: tflops\n"
    << "    fleet_below_median_pct: 0.01\n    basis: " << yaml_quote(hostile()) << "\n    severity: WARN\n";
  t << "  - name: " << yaml_quote(hostile()) << "\n    phase: nccl-scaling\n    test: all_reduce\n    metric: busbw\n"
    << "    min_line_rate_fraction: 0.8\n    basis: " << yaml_quote(hostile()) << "\n    severity: FAIL\n";
  std::printf("%s (%d hostile strings)\n", dir.c_str(), g_marker);
  return 0;
}
