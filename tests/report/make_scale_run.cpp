// Writes a synthetic run of a large cluster, for the report's scale benchmark (issue 18):
// every phase, with the record counts the real phases write per GPU, per node and per job:
//   discover.h5      one inventory per rank, gpus_per_node per node
//   smoke.h5         per GPU: GEMM 5 dtypes x 3 sizes, device and host copies, 8 health
//                    items, sustained load (33 records); per node: Slurm, binding, filesystem (8)
//   nccl-scaling.h5  per node: 8 collectives x 27 sizes intra_node (busbw, algbw); across the
//                    job: the same inter_node and all
//   ddp.h5, fsdp-lora.h5  per rank: throughput, step times, memory, the checkpoint drill (4);
//                    per node its checkpoint write; 200 loss steps
// One GPU is slow at GEMM, one node's GPU reports an uncorrectable ECC error and one node
// writes checkpoints below the floor, so the report has failures, outliers and a node to drain
// at that size too. With --every-gpu-fails 1, every GPU also fails the same binding check (its
// rank and GPU named in the message), the run of issue 39 whose "What failed" had 8,193 rows.
// Usage: gpuaccept-scale-run DIR [--nodes 1024] [--gpus 8] [--every-gpu-fails 1]
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "results/result_file.h"

using namespace gpuaccept;
namespace fs = std::filesystem;

namespace {

int g_nodes = 1024, g_gpus = 8;
bool g_every_gpu_fails = false;

std::string node_name(int n) { return fmt::format("gpu{:04d}", n + 1); }

Record record(const std::string& phase, int node, int gpu, const std::string& test, const std::string& metric,
              double value, const std::string& unit, Params params) {
  Record r;
  r.phase = phase;
  r.job_id = "777";
  r.rank = node < 0 ? kJobLevel : node * g_gpus + std::max(gpu, 0);
  r.node = node < 0 ? "" : node_name(node);  // a record about the job names no node
  r.gpu_index = gpu;
  r.gpu_uuid = gpu < 0 ? "" : fmt::format("GPU-{:04d}-{}", node, gpu);
  r.test = test;
  r.metric = metric;
  r.value = value;
  r.unit = unit;
  r.params = std::move(params);
  return r;
}

ResultFile file_for(const std::string& phase) {
  ResultFile f;
  f.attributes = {{"phase", phase},           {"tool_version", "0.1.0"},
                  {"git_commit", "scale"},    {"start_time", "2026-11-25T10:00:00Z"},
                  {"end_time", "2026-11-25T10:30:00Z"}, {"slurm_job_id", "777"},
                  {"slurm_nodelist", fmt::format("gpu[0001-{:04d}]", g_nodes)},
                  {"world_size", std::to_string(g_nodes * g_gpus)},
                  {"config_path", "configs/full.yaml"}, {"config", "smoke:\n  gemm_sizes: [4096, 8192, 16384]\n"},
                  {"complete", "yes"}};
  return f;
}

void write_discover(const fs::path& dir) {
  ResultFile f = file_for("discover");
  for (int n = 0; n < g_nodes; ++n) {
    nlohmann::json gpus = nlohmann::json::array();
    for (int i = 0; i < g_gpus; ++i)
      gpus.push_back({{"nvml_index", i}, {"cuda_index", i}, {"node_index", i}, {"name", "NVIDIA H200"},
                      {"uuid", fmt::format("GPU-{:04d}-{}", n, i)}, {"memory_bytes", 150754820096ULL},
                      {"compute_capability", "9.0"}, {"nvlinks", nlohmann::json::array()},
                      {"power_limit_w", 700.0}, {"form_factor", "SXM"}});
    for (int i = 0; i < g_gpus; ++i) {
      const nlohmann::json inv = {
          {"rank", n * g_gpus + i}, {"local_rank", i}, {"host", node_name(n)}, {"kernel", "6.1.0-27-amd64"},
          {"cpu", {{"model", "AMD EPYC 9454"}, {"sockets", 2}, {"cores", 96}, {"memory_bytes", 1623497637888ULL}}},
          {"gpus", {{"driver_version", "580.95.05"}, {"cuda_driver_version", "13.0"}, {"cuda_runtime_version", "13.0"},
                    {"node_gpus", gpus}, {"visible", nlohmann::json::array({gpus[i]})}}},
          {"versions", {{"nccl", "2.28.3"}, {"pmix", "4.2.2"}, {"slurm", "24.11"}}}};
      f.documents["inventory"].push_back(inv.dump());
    }
    Record r = record("discover", n, -1, "gpus_per_node", "gpus", g_gpus, "count",
                      {{"expected", std::to_string(g_gpus)}, {"source", "slurm gres"}});
    r.message = fmt::format("{} GPUs present", g_gpus);
    f.records.push_back(std::move(r));
  }
  write_result_file(dir / "discover.h5", f);
}

void write_smoke(const fs::path& dir) {
  ResultFile f = file_for("smoke");
  const char* dtypes[] = {"bf16", "fp16", "tf32", "fp32", "fp8_e4m3"};
  const double peak[] = {800, 790, 380, 55, 1300};
  for (int n = 0; n < g_nodes; ++n) {
    for (const char* t : {"slurm_nodes", "slurm_gres", "binding_gpu_count", "binding_cpus", "shared_fs",
                          "shared_fs_metadata", "shared_fs_stream", "slurm_memory"})
      f.records.push_back(record("smoke", n, -1, t, "", NAN, "", {}));
    for (int g = 0; g < g_gpus; ++g) {
      if (g_every_gpu_fails) {
        Record b = record("smoke", n, g, "binding_gpu_count", "gpus", 0, "count", {});
        b.status = Status::Fail;
        b.message = fmt::format("rank {} on {} sees 0 GPUs; Slurm gave the task 1 (SLURM_GPUS_ON_NODE={}, "
                                "CUDA_VISIBLE_DEVICES={})",
                                n * g_gpus + g, node_name(n), g_gpus, g);
        f.records.push_back(std::move(b));
      }
      const double wobble = 1.0 + 0.01 * ((n * 7 + g * 3) % 5 - 2);
      const bool slow = n == g_nodes / 2 && g == 3;
      for (int d = 0; d < 5; ++d)
        for (int size : {4096, 8192, 16384}) {
          const std::string s = std::to_string(size);
          f.records.push_back(record("smoke", n, g, "gemm", "tflops", peak[d] * wobble * (slow ? 0.7 : 1.0), "TFLOP/s",
                                     {{"dtype", dtypes[d]}, {"m", s}, {"n", s}, {"k", s}}));
        }
      f.records.push_back(record("smoke", n, g, "memory_bandwidth", "bandwidth", 4300 * wobble, "GB/s",
                                 {{"kind", "d2d_copy"}, {"bytes", "2147483648"}}));
      f.records.push_back(record("smoke", n, g, "memory_bandwidth", "bandwidth", 4100 * wobble, "GB/s",
                                 {{"kind", "read_write"}, {"bytes", "2147483648"}}));
      for (const char* dir_name : {"h2d", "d2h"})
        f.records.push_back(record("smoke", n, g, "host_device_bandwidth", "bandwidth", 55 * wobble, "GB/s",
                                   {{"direction", dir_name}, {"bytes", "536870912"}}));
      for (const char* item : {"ecc_uncorrected", "row_remap", "throttle", "temperature", "power", "sm_clock",
                               "nvlink", "pcie_link"}) {
        Record h = record("smoke", n, g, "gpu_health", "", NAN, "", {{"item", item}});
        if (n == g_nodes / 3 && g == 5 && std::string(item) == "ecc_uncorrected") {
          h.status = Status::Fail;
          h.message = "2 volatile uncorrectable ECC errors";
        }
        f.records.push_back(std::move(h));
      }
      const std::pair<const char*, double> sustained[] = {
          {"tflops", 700 * wobble}, {"mismatches", 0}, {"max_temperature", 71}, {"min_sm_clock", 1830}, {"throttle", 0}};
      for (const auto& [m, v] : sustained)
        f.records.push_back(record("smoke", n, g, "sustained_load", m, v, "", {{"dtype", "bf16"}, {"size", "8192"}}));
    }
  }
  write_result_file(dir / "smoke.h5", f);
}

void write_nccl(const fs::path& dir) {
  ResultFile f = file_for("nccl-scaling");
  const char* collectives[] = {"all_reduce", "all_gather", "reduce_scatter", "broadcast",
                               "reduce", "alltoall", "sendrecv", "gather"};
  const auto sweep = [&](int node, const std::string& scale, int ranks, double peak) {
    for (const char* c : collectives)
      for (int e = 3; e < 30; ++e) {
        const double bytes = std::ldexp(1.0, e);
        const double bw = peak * bytes / (bytes + 4e6);
        Params p = {{"bytes", fmt::format("{:.0f}", bytes)}, {"dtype", "float"}, {"scale", scale},
                    {"ranks", std::to_string(ranks)}};
        f.records.push_back(record("nccl-scaling", node, -1, c, "busbw", bw, "GB/s", p));
        f.records.push_back(record("nccl-scaling", node, -1, c, "algbw", bw / 1.8, "GB/s", p));
      }
  };
  for (int n = 0; n < g_nodes; ++n) sweep(n, "intra_node", g_gpus, 480);
  sweep(-1, "inter_node", g_nodes, 45);
  sweep(-1, "all", g_nodes * g_gpus, 380);
  write_result_file(dir / "nccl-scaling.h5", f);
}

// The training checkpoint drill: per rank its save, dd-style write and read and restore; per
// node its write bandwidth (one node slow); the job's aggregates and checks.
void add_checkpoint_drill(ResultFile& f, const std::string& phase) {
  const Params saved = {{"step", "100"}, {"bytes", "186731520"}};
  for (int n = 0; n < g_nodes; ++n) {
    for (int g = 0; g < g_gpus; ++g) {
      f.records.push_back(record(phase, n, g, "checkpoint_save", "write_bandwidth", 1.5, "GB/s", saved));
      f.records.push_back(record(phase, n, g, "checkpoint_baseline", "write_bandwidth", 1.8, "GB/s", {}));
      f.records.push_back(record(phase, n, g, "checkpoint_baseline", "read_bandwidth", 2.5, "GB/s", {}));
      f.records.push_back(record(phase, n, g, "checkpoint_restore", "read_bandwidth", 2.2, "GB/s", {}));
    }
    Record node = record(phase, n, -1, "checkpoint_save", "node_write_bandwidth", n == g_nodes / 3 ? 0.4 : 12, "GB/s", {});
    node.rank = kJobLevel;
    f.records.push_back(node);
  }
  const auto job = [&](const char* test, const char* metric, double value, const char* unit) {
    return record(phase, -1, -1, test, metric, value, unit, {});
  };
  const double ranks = g_nodes * g_gpus;
  f.records.push_back(job("checkpoint_save", "aggregate_write_bandwidth", 1.5 * ranks, "GB/s"));
  f.records.push_back(job("checkpoint_save", "seconds_to_consistent", 0.4, "s"));
  f.records.push_back(job("checkpoint_save", "bytes", 186731520 * ranks, "B"));
  f.records.push_back(job("checkpoint_baseline", "aggregate_write_bandwidth", 1.8 * ranks, "GB/s"));
  f.records.push_back(job("checkpoint_baseline", "aggregate_read_bandwidth", 2.5 * ranks, "GB/s"));
  f.records.push_back(job("checkpoint_efficiency", "write_vs_sequential", 83.3, "%"));
  f.records.back().params = {{"bytes_per_rank", "186731520"}};
  f.records.push_back(job("checkpoint_restore", "aggregate_read_bandwidth", 2.2 * ranks, "GB/s"));
  f.records.push_back(job("checkpoint_restore", "seconds", 0.3, "s"));
  for (const char* test : {"checkpoint_save", "checkpoint_restore", "checkpoint_resume"}) f.records.push_back(job(test, "", NAN, ""));
}

void write_training(const fs::path& dir, const std::string& phase, double rate) {
  ResultFile f = file_for(phase);
  const Params all = {{"scale", "all"}, {"gpus", std::to_string(g_nodes * g_gpus)}};
  for (int n = 0; n < g_nodes; ++n)
    for (int g = 0; g < g_gpus; ++g) {
      f.records.push_back(record(phase, n, -1, "throughput", "tokens_per_s", rate, "tokens/s", all));
      for (const char* m : {"forward_ms", "backward_ms", "comm_exposed_ms", "optimizer_ms", "step_ms", "wall_ms"})
        f.records.push_back(record(phase, n, -1, "step_time", m, 10, "ms", all));
      f.records.push_back(record(phase, n, -1, "memory", "device_used_gib", 40, "GiB", {}));
      f.records.push_back(record(phase, n, -1, "replicas", "", NAN, "", {}));
    }
  for (int s = 1; s <= 200; ++s)
    f.records.push_back(record(phase, -1, -1, "loss_curve", "loss", 10.0 * std::exp(-s / 60.0) + 1, "nats",
                               {{"step", std::to_string(s)}}));
  f.records.push_back(record(phase, -1, -1, "throughput", "tokens_per_s_per_gpu", rate, "tokens/s", all));
  add_checkpoint_drill(f, phase);
  write_result_file(dir / (phase + ".h5"), f);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIR [--nodes 1024] [--gpus 8] [--every-gpu-fails 1]\n", argv[0]);
    return 2;
  }
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--nodes") g_nodes = std::stoi(argv[i + 1]);
    else if (flag == "--gpus") g_gpus = std::stoi(argv[i + 1]);
    else if (flag == "--every-gpu-fails") g_every_gpu_fails = std::string(argv[i + 1]) == "1";
    else {
      std::fprintf(stderr, "unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  const fs::path dir = argv[1];
  fs::create_directories(dir);
  write_discover(dir);
  write_smoke(dir);
  write_nccl(dir);
  write_training(dir, "ddp", 300000);
  write_training(dir, "fsdp-lora", 9000);
  std::printf("%s: %d nodes x %d GPUs\n", dir.c_str(), g_nodes, g_gpus);
  return 0;
}
