// Writes a fake run directory with real results files, for the report's integration
// and browser tests:
//   discover.h5      inventories of 2 nodes x 4 "NVIDIA H200" SXM at 700 W; the second node is
//                    named "<script>alert(1)</script>", runs another kernel, and its GPU 3 is
//                    capped to 500 W (the H200 floors do not apply to it)
//   smoke.h5         gemm and memory records; gpa-node1 GPU 2 is 25% slower at gemm (below the
//                    fleet median, not the H200 floor, which is for a GPU that cannot hold its
//                    clocks);
//                    an fp8 SKIP whose message contains <b>
//   nccl-scaling.h5  all_reduce and all_gather busbw sweeps, per node and across both
//   ddp.h5           throughput and scaling efficiency for 1..8 GPUs; a training checkpoint
//                    drill whose figures clear every rule
//   fsdp-lora.parts/ one rank's checkpoint and no fsdp-lora.h5 (rank 0 died)
// Usage: gpuaccept-report-fixture DIR [--baseline]   (--baseline: every value 10% better)
//        gpuaccept-report-fixture --foreign FILE      (an HDF5 file gpuaccept did not write)
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "results/hdf5_handle.h"
#include "results/result_file.h"

using namespace gpuaccept;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kNodes = {"gpa-node1", "<script>alert(1)</script>"};
constexpr int kGpusPerNode = 4;
double g_scale = 1.0;  // --baseline writes a better run to compare with

Record record(const std::string& phase, const std::string& node, int gpu, const std::string& test,
              const std::string& metric, double value, const std::string& unit, Params params) {
  Record r;
  r.phase = phase;
  r.job_id = "4242";
  const int node_index = node == kNodes[1] ? 1 : 0;
  r.rank = gpu < 0 ? kJobLevel : node_index * kGpusPerNode + gpu;
  r.node = node;
  r.gpu_index = gpu;
  r.gpu_uuid = gpu < 0 ? "" : fmt::format("GPU-{}-{}", node_index, gpu);
  r.test = test;
  r.metric = metric;
  r.value = std::isnan(value) ? value : value * g_scale;
  r.unit = unit;
  r.params = std::move(params);
  return r;
}

ResultFile file_for(const std::string& phase) {
  ResultFile f;
  f.attributes = {{"phase", phase},
                  {"tool_version", "0.1.0"},
                  {"git_commit", "fixture"},
                  {"start_time", "2026-11-20T10:00:00Z"},
                  {"end_time", "2026-11-20T10:05:00Z"},
                  {"slurm_job_id", "4242"},
                  {"slurm_nodelist", "gpa-node[1-2]"},
                  {"world_size", "8"},
                  {"hosts", kNodes[0] + "," + kNodes[1]},
                  {"config_path", "configs/fixture.yaml"},
                  {"config", "discover:\n  expected_gpus_per_node: 4  # <i>not html</i>\n"},
                  {"complete", "yes"}};
  return f;
}

nlohmann::json inventory(int rank) {
  const std::string& host = kNodes[rank / kGpusPerNode];
  nlohmann::json gpus = nlohmann::json::array();
  for (int i = 0; i < kGpusPerNode; ++i)
    gpus.push_back({{"nvml_index", i}, {"cuda_index", i}, {"node_index", i}, {"name", "NVIDIA H200"},
                    {"uuid", fmt::format("GPU-{}-{}", rank / kGpusPerNode, i)}, {"memory_bytes", 150754820096ULL},
                    {"compute_capability", "9.0"}, {"nvlinks", nlohmann::json::array()},
                    {"power_limit_w", host == kNodes[1] && i == 3 ? 500.0 : 700.0}, {"default_power_limit_w", 700.0},
                    {"module_id", i + 1}, {"form_factor", "SXM"}});
  return {{"rank", rank},
          {"local_rank", rank % kGpusPerNode},
          {"host", host},
          {"kernel", rank < kGpusPerNode ? "6.1.0-27-amd64" : "6.1.0-26-amd64"},
          {"cpu", {{"model", "AMD EPYC 9454"}, {"sockets", 2}, {"cores", 96}, {"memory_bytes", 1623497637888ULL}}},
          {"gpus",
           {{"driver_version", "575.57.08"},
            {"cuda_driver_version", "12.9"},
            {"cuda_runtime_version", "12.9"},
            {"node_gpus", gpus},
            {"visible", nlohmann::json::array({gpus[rank % kGpusPerNode]})}}},
          {"infiniband", nlohmann::json::array({{{"device", "mlx5_0"}, {"port", 1}, {"state", "4: ACTIVE"},
                                                 {"rate", "400 Gb/sec (4X NDR)"}, {"link_layer", "InfiniBand"}}})},
          {"versions", {{"nccl", "2.28.3"}, {"pmix", "4.2.2"}, {"slurm", "24.11"}}}};
}

void write_discover(const fs::path& dir) {
  ResultFile f = file_for("discover");
  for (int rank = 0; rank < 2 * kGpusPerNode; ++rank) f.documents["inventory"].push_back(inventory(rank).dump());
  for (const auto& node : kNodes) {
    Record r = record("discover", node, -1, "gpus_per_node", "gpus", 4, "count", {{"expected", "4"}, {"source", "config"}});
    r.message = "4 GPUs present, 4 expected (discover.expected_gpus_per_node)";
    f.records.push_back(r);
  }
  Record alike = record("discover", "", -1, "nodes_alike", "", NAN, "", {{"attribute", "gpu_model"}});
  alike.message = "gpu_model = 'NVIDIA H200' on all 2 nodes";
  f.records.push_back(alike);
  write_result_file(dir / "discover.h5", f);
}

void write_smoke(const fs::path& dir) {
  ResultFile f = file_for("smoke");
  for (const auto& node : kNodes)
    for (int gpu = 0; gpu < kGpusPerNode; ++gpu) {
      const bool slow = node == kNodes[0] && gpu == 2;
      f.records.push_back(record("smoke", node, gpu, "gemm", "tflops", slow ? 600.0 : 800.0, "TFLOP/s",
                                 {{"dtype", "bf16"}, {"m", "8192"}, {"n", "8192"}, {"k", "8192"}}));
      f.records.push_back(record("smoke", node, gpu, "gemm", "tflops", 790.0 + gpu, "TFLOP/s",
                                 {{"dtype", "fp16"}, {"m", "8192"}, {"n", "8192"}, {"k", "8192"}}));
      Record fp8 = record("smoke", node, gpu, "gemm", "tflops", NAN, "TFLOP/s",
                          {{"dtype", "fp8_e4m3"}, {"m", "8192"}, {"n", "8192"}, {"k", "8192"}});
      fp8.status = Status::Skip;
      fp8.message = "fp8 needs <b>cuBLASLt</b> with FP8 support";
      f.records.push_back(fp8);
      f.records.push_back(record("smoke", node, gpu, "memory_bandwidth", "bandwidth", 4300.0 + 10 * gpu, "GB/s",
                                 {{"kind", "d2d_copy"}}));
    }
  write_result_file(dir / "smoke.h5", f);
}

void write_nccl(const fs::path& dir) {
  ResultFile f = file_for("nccl-scaling");
  // busbw (GB/s) on 4 H200 at 32 MiB .. 8 GiB (2026-10/11 measurements, in between interpolated).
  const double intra[] = {288.2, 305, 327.9, 335, 346.7, 352, 358, 362, 364.9};
  for (const char* test : {"all_reduce", "all_gather"})
    for (int i = 0; i < 9; ++i) {
      const std::string bytes = std::to_string((1ULL << 25) << i);
      for (const auto& node : kNodes)
        f.records.push_back(record("nccl-scaling", node, -1, test, "busbw", intra[i] * (test[4] == 'g' ? 0.97 : 1), "GB/s",
                                   {{"bytes", bytes}, {"dtype", "float"}, {"inplace", "0"}, {"scale", "intra_node"},
                                    {"ranks", "4"}, {"transport", "nvlink"}}));
      f.records.push_back(record("nccl-scaling", "", -1, test, "busbw", 20 + 7.5 * i, "GB/s",
                                 {{"bytes", bytes}, {"dtype", "float"}, {"inplace", "0"}, {"scale", "inter_node"},
                                  {"ranks", "8"}, {"transport", "ib"}}));
    }
  write_result_file(dir / "nccl-scaling.h5", f);
}

// The training checkpoint drill (docs/results-format.md): each rank saves 1/8 of the state
// at step 10, beside a dd-style write and read of as many bytes; every figure clears its rule.
void add_checkpoint_drill(ResultFile& f) {
  const double rank_bytes = 186731520;
  const Params saved = {{"step", "10"}, {"bytes", fmt::format("{:.0f}", rank_bytes)}};
  for (std::size_t n = 0; n < kNodes.size(); ++n) {
    for (int g = 0; g < kGpusPerNode; ++g) {
      f.records.push_back(record("ddp", kNodes[n], g, "checkpoint_save", "write_bandwidth", 1.6 + 0.05 * g, "GB/s", saved));
      f.records.push_back(record("ddp", kNodes[n], g, "checkpoint_baseline", "write_bandwidth", 1.9, "GB/s", {}));
      f.records.push_back(record("ddp", kNodes[n], g, "checkpoint_baseline", "read_bandwidth", 2.6, "GB/s", {}));
      f.records.push_back(record("ddp", kNodes[n], g, "checkpoint_restore", "read_bandwidth", 2.4, "GB/s", {}));
    }
    f.records.push_back(record("ddp", kNodes[n], -1, "checkpoint_save", "node_write_bandwidth", 6.2 + n, "GB/s", {}));
  }
  const auto job = [&](const char* test, const char* metric, double value, const char* unit) {
    f.records.push_back(record("ddp", "", -1, test, metric, value, unit, {}));
  };
  job("checkpoint_save", "aggregate_write_bandwidth", 12.4, "GB/s");
  job("checkpoint_save", "seconds_to_consistent", 0.13, "s");
  job("checkpoint_save", "bytes", 8 * rank_bytes, "B");
  job("checkpoint_baseline", "aggregate_write_bandwidth", 14.8, "GB/s");
  job("checkpoint_baseline", "aggregate_read_bandwidth", 20.1, "GB/s");
  job("checkpoint_efficiency", "write_vs_sequential", 83.8, "%");
  f.records.back().params = {{"bytes_per_rank", fmt::format("{:.0f}", rank_bytes)}};
  job("checkpoint_restore", "aggregate_read_bandwidth", 18.9, "GB/s");
  job("checkpoint_restore", "seconds", 0.09, "s");
  const std::pair<const char*, const char*> checks[] = {
      {"checkpoint_save", "step 10: 8 files, 1.4 GiB, manifest written"},
      {"checkpoint_restore", "restored /shared/ckpt/ddp/step-00000010"},
      {"checkpoint_resume", "steps 11-14 compared: losses and state checksum bit-equal to the run that never stopped"}};
  for (const auto& [test, message] : checks) {
    Record r = record("ddp", "", -1, test, "", NAN, "", {});
    r.message = message;
    f.records.push_back(r);
  }
}

void write_ddp(const fs::path& dir) {
  // As the ddp phase writes them on 8 GPUs of 2 nodes (phases/ddp/README.md).
  ResultFile f = file_for("ddp");
  const struct {
    const char* scale;
    int gpus;
    double rate;
  } scales[] = {{"single_gpu", 1, 392000}, {"node", 4, 384000}, {"all", 8, 375000}};
  for (const auto& sc : scales) {
    const Params p{{"gpus", std::to_string(sc.gpus)}, {"scale", sc.scale}, {"model", "gpt2_124m"},
                   {"micro_batch", "16"}, {"seq_len", "1024"}};
    f.records.push_back(record("ddp", "", -1, "throughput", "tokens_per_s_per_gpu", sc.rate, "tokens/s", p));
    if (sc.gpus > 1) {
      const Params s{{"from", "single_gpu"}, {"to", sc.scale}, {"gpus", std::to_string(sc.gpus)}};
      f.records.push_back(record("ddp", "", -1, "scaling", "efficiency", 100 * sc.rate / 392000, "%", s));
      // Against the slowest of the GPUs alone (386,000 tokens/s).
      f.records.push_back(record("ddp", "", -1, "scaling", "efficiency_vs_slowest", 100 * sc.rate / 386000, "%", s));
    }
  }
  for (int step = 1; step <= 20; ++step)
    f.records.push_back(record("ddp", "", -1, "loss_curve", "loss", 1.1 + 9.7 * std::exp(-0.2 * step), "nats",
                               {{"step", std::to_string(step)}}));
  add_checkpoint_drill(f);
  write_result_file(dir / "ddp.h5", f);
}

void write_fsdp_parts(const fs::path& dir) {
  ResultFile f = file_for("fsdp-lora");
  f.attributes["complete"] = "partial";
  f.attributes["rank"] = "1";
  Record r = record("fsdp-lora", kNodes[0], 1, "phase", "", NAN, "", {});
  r.message = "checkpoint before the step that hung";
  f.records.push_back(r);
  fs::create_directories(dir / "fsdp-lora.parts");
  write_result_file(dir / "fsdp-lora.parts" / "rank-00001.h5", f);
}

// A valid HDF5 file with a dataset, but without gpuaccept's layout attribute.
void write_foreign(const fs::path& path) {
  hdf5_quiet();
  H5Id f = h5_file(GPUACCEPT_HDF5_CHECK(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT)));
  const hsize_t n = 4;
  H5Id space = h5_space(GPUACCEPT_HDF5_CHECK(H5Screate_simple(1, &n, nullptr)));
  H5Id ds = h5_dataset(GPUACCEPT_HDF5_CHECK(
      H5Dcreate2(f, "temperatures", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
  const double values[4] = {40, 41, 42, 43};
  GPUACCEPT_HDF5_CHECK(H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIR [--baseline] | --foreign FILE\n", argv[0]);
    return 2;
  }
  if (std::string(argv[1]) == "--foreign" && argc > 2) {
    write_foreign(argv[2]);
    return 0;
  }
  const fs::path dir = argv[1];
  const bool baseline = argc > 2 && std::string(argv[2]) == "--baseline";
  if (baseline) g_scale = 1.1;
  fs::create_directories(dir);
  write_discover(dir);
  write_smoke(dir);
  write_nccl(dir);
  write_ddp(dir);
  if (!baseline) write_fsdp_parts(dir);
  std::printf("%s\n", dir.c_str());
  return 0;
}
