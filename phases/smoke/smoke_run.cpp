#include "smoke/smoke_run.h"

#include <cstdlib>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/log.h"
#include "common/progress.h"
#include "smoke/binding_checks.h"
#include "smoke/cpu_set.h"
#include "smoke/fs_checks.h"
#include "smoke/gemm_bench.h"
#include "smoke/gpu_device.h"
#include "smoke/health_checks.h"
#include "smoke/memory_bench.h"
#include "smoke/peer_bench.h"
#include "smoke/rank_facts_collect.h"
#include "smoke/resources.h"
#include "smoke/slurm_checks.h"
#include "smoke/smoke_config.h"
#include "smoke/summary_table.h"
#include "smoke/sustained.h"
#include "common/json_text.h"

namespace gpuaccept::smoke {

namespace {

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

class Runner {
 public:
  Runner(PhaseContext& ctx, const SmokeConfig& cfg, const GpuDevice& gpu, bool peer_matrix_only)
      : ctx_(ctx), cfg_(cfg), gpu_(gpu), progress_(peer_matrix_only ? 1 : count_steps()) {}

  void run() {
    const RankFacts mine = collect_rank_facts(ctx_.world, gpu_);
    std::vector<RankFacts> all;
    for (const auto& text : ctx_.world.allgather_string(json_text(nlohmann::json(mine))))
      all.push_back(nlohmann::json::parse(text).get<RankFacts>());
    const SlurmEnv env = SlurmEnv::from_process();

    step("slurm", "slurm", [&] {
      if (ctx_.world.rank() == 0) add_all(controller_checks(env, all));
      const CpuSet cpus = current_affinity();
      add(check_cpus_per_task(env, static_cast<int>(cpus.size()), mine.cpus));
      if (ctx_.world.local_rank() == 0) {
        Record m = check_memory(requested_memory(process_env()), available_memory(), env.in_job());
        add(std::move(m));
      }
    });
    step("binding", "binding", [&] {
      if (ctx_.world.rank() == 0) {
        add_all(check_gpu_sharing(all, cfg_.allow_shared_gpus));
        add_all(check_cpu_overlap(all, cfg_.require_exclusive_cpus));
      }
      add(check_gpu_count(mine, env, env_or("SLURM_GPU_BIND", "")));
      add(check_numa_affinity(mine, cfg_.require_numa_affinity));
    });
    step("shared_fs", "shared_fs", [&] { run_shared_fs_checks(ctx_, cfg_); });
    step("gpu_health", "gpu_health", [&] { add_all(gpu_health_checks(gpu_, cfg_)); });

    if (bench_skip_reason().empty()) {
      for (GemmDtype t : cfg_.gemm_dtypes)
        for (int size : cfg_.gemm_sizes)
          gpu_step(fmt::format("gemm {} {}^3", to_string(t), size), "gemm", [&] { add(measure_gemm(gpu_, t, size, cfg_)); });
    } else {
      gpu_step("gemm", "gemm", [&] { add(skip_record("gemm")); });
    }
    gpu_step(fmt::format("memory_bandwidth {}", format_bytes(static_cast<double>(cfg_.memory_bytes))), "memory_bandwidth",
             [&] { add_all(bench_skip_reason().empty() ? measure_device_memory(gpu_, cfg_) : one(skip_record("memory_bandwidth"))); });
    gpu_step(fmt::format("host_device_bandwidth {}", format_bytes(static_cast<double>(cfg_.host_bytes))),
             "host_device_bandwidth", [&] {
               if (!bench_skip_reason().empty()) {
                 add(skip_record("host_device_bandwidth"));
                 add(pcie_link_check(gpu_, false));  // idle, so only the width can fail
                 return;
               }
               Record link;
               add_all(measure_host_device(gpu_, cfg_, [&] { link = pcie_link_check(gpu_, true); }));
               add(std::move(link));
             });
    gpu_step(fmt::format("sustained_load {:g}s", cfg_.sustained_seconds), "sustained_load", [&] {
      add_all(bench_skip_reason().empty() ? run_sustained_load(gpu_, cfg_) : one(skip_record("sustained_load")));
    });
    gpu_step("peer_matrix", "peer_bandwidth", [&] { peer_matrix(); });
    summarize();
  }

  // --peer-matrix: the one step.
  void run_peer_matrix_only() {
    gpu_step("peer_matrix", "peer_bandwidth", [&] { peer_matrix(); });
    summarize();
  }

 private:
  PhaseContext& ctx_;
  const SmokeConfig& cfg_;
  const GpuDevice& gpu_;
  Progress progress_;

  int count_steps() const {
    const int gemms = bench_skip_reason().empty()
                          ? static_cast<int>(cfg_.gemm_dtypes.size() * cfg_.gemm_sizes.size())
                          : 1;
    return 4 + gemms + 4;
  }

  std::string bench_skip_reason() const {
    if (!gpu_.present()) return gpu_.reason;
    if (cfg_.skip_gpu_benchmarks) return "smoke.skip_gpu_benchmarks is set";
    return "";
  }

  Record skip_record(const std::string& test) const {
    Record r = gpu_record(gpu_, test);
    r.status = Status::Skip;
    r.message = bench_skip_reason();
    return r;
  }
  static std::vector<Record> one(Record r) { return {std::move(r)}; }

  void add(Record r) { ctx_.results.add(std::move(r)); }
  void add_all(std::vector<Record> rs) {
    for (auto& r : rs) add(std::move(r));
  }

  // Runs a step; an exception becomes an ERROR record of `test`, and the phase goes on.
  template <typename F>
  void step(const std::string& what, const std::string& test, F&& body) {
    try {
      body();
    } catch (const std::exception& e) {
      log_error("{}: {}", what, e.what());
      Record r = gpu_record(gpu_, test);
      r.status = Status::Error;
      r.message = fmt::format("{} on rank {} ({}): {}", what, ctx_.world.rank(), ctx_.world.hostname(), e.what());
      if (is_world_failure(e)) r.params[kCauseParam] = kCausePeer;  // some other rank or node never arrived
      add(std::move(r));
    }
    ctx_.results.checkpoint();
    progress_.step(what);
  }

  // GPU steps start together on every rank: the node's GPUs are loaded at once, as a
  // training job loads them, and no rank's copies overlap another step of a neighbour.
  template <typename F>
  void gpu_step(const std::string& what, const std::string& test, F&& body) {
    ctx_.world.barrier();
    step(what, test, std::forward<F>(body));
  }

  void peer_matrix() {
    if (ctx_.world.local_rank() != 0) return;  // one process per node does the node's matrix
    Record r = gpu_record(gpu_, "peer_bandwidth");
    r.status = Status::Skip;
    if (!bench_skip_reason().empty()) {
      r.message = bench_skip_reason();
    } else if (gpu_.visible < 2) {
      r.message = fmt::format(
          "this process sees {} GPU (CUDA_VISIBLE_DEVICES={}): the peer matrix needs one process that sees all "
          "GPUs of the node; run `gpuaccept-smoke --peer-matrix` in a step with one task per node and all its "
          "GPUs (srun --ntasks-per-node=1 --gpus-per-node=N)",
          gpu_.visible, env_or("CUDA_VISIBLE_DEVICES", "unset"));
    } else {
      add_all(measure_peer_matrix(gpu_.visible, cfg_));
      return;
    }
    add(std::move(r));
  }

  // Rank 0 prints its records as a table; every rank names its own failures, so a
  // failing rank is visible in slurm-*.out without opening the results file.
  void summarize() {
    int counts[4] = {};
    for (const auto& r : ctx_.results.records()) {
      ++counts[static_cast<int>(r.status)];
      if (is_failure(r.status) && ctx_.world.rank() != 0)
        log_info("{} {} {}: {}", to_string(r.status), r.test, encode_params(r.params), r.message);
    }
    std::string table = format_records_table(ctx_.results.records());
    table.pop_back();  // the last newline: log_line ends the line itself
    log_rank0("records of rank 0:\n{}", table);
    log_info("{} PASS, {} FAIL, {} SKIP, {} ERROR on this rank", counts[0], counts[2], counts[1], counts[3]);
  }
};

}  // namespace

void run_smoke(PhaseContext& ctx, const SmokeOptions& opts) {
  const SmokeConfig cfg = load_smoke_config(ctx.config);
  const GpuDevice gpu = select_gpu(ctx.world.local_rank());
  if (gpu.present())
    log_info("GPU {} of the node (CUDA device {} of {} visible): {} {} ({})", gpu.node_index, gpu.index, gpu.visible,
             gpu.name, gpu.uuid, gpu.bus_id);
  else
    log_info("no GPU: {}", gpu.reason);
  Runner runner(ctx, cfg, gpu, opts.peer_matrix);
  if (opts.peer_matrix) runner.run_peer_matrix_only();
  else runner.run();
}

std::string config_help() {
  const SmokeConfig d;
  return fmt::format(
      "Config keys (YAML, under smoke:), with defaults:\n"
      "  gemm_sizes [4096, 8192, 16384]   gemm_dtypes [bf16, fp16, tf32, fp32, fp8_e4m3]\n"
      "  gemm_repeats {}  gemm_algos {}  gemm_workspace_bytes {}  gemm_verify_rows {}\n"
      "  warmup_ms {}  min_sample_ms {}  memory_bytes {}  memory_repeats {}  host_bytes {}  peer_bytes {}\n"
      "  sustained_seconds {}  sustained_size {}  sustained_dtype bf16  skip_gpu_benchmarks false\n"
      "  max_temperature_c (5 C below NVML's slowdown threshold)  nvlink_crc_per_second {}\n"
      "  require_peer_access true  allow_shared_gpus false  require_exclusive_cpus true\n"
      "  require_numa_affinity false  fs_dir (<run dir>/smoke.fs)  fs_metadata_files {}  fs_stream_bytes {}\n"
      "Peer matrix: with one GPU per task (Slurm's usual binding), run a second step\n"
      "  srun --ntasks-per-node=1 --gpus-per-node=N --mpi=pmix gpuaccept-smoke --peer-matrix\n"
      "which writes its records to <run>/smoke-2.h5.",
      d.gemm_repeats, d.gemm_algos, d.gemm_workspace_bytes, d.gemm_verify_rows, d.warmup_ms, d.min_sample_ms,
      d.memory_bytes, d.memory_repeats, d.host_bytes, d.peer_bytes, d.sustained_seconds, d.sustained_size,
      d.nvlink_crc_per_second, d.fs_metadata_files, d.fs_stream_bytes);
}

}  // namespace gpuaccept::smoke
