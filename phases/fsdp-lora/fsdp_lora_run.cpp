#include "fsdp-lora/fsdp_lora_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>

#include <cuda_runtime.h>
#include <fmt/format.h>

#include "common/error.h"
#include "common/log.h"
#include "hw/nvml.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_handles.h"
#include "cuda/rank_device.h"
#include "cuda/rank_info.h"
#include "cuda/rank_runtime.h"
#include "fsdp-lora/base_checkpoint.h"
#include "fsdp-lora/equivalence.h"
#include "fsdp-lora/fsdp_gradient_check.h"
#include "fsdp-lora/fsdp_summary.h"
#include "fsdp-lora/fsdp_trainer.h"
#include "fsdp-lora/gpu/fsdp_weights.h"
#include "fsdp-lora/gpu/qwen_model.h"
#include "fsdp-lora/memory_plan.h"
#include "fsdp-lora/rank_room.h"
#include "fsdp-lora/shard_plan.h"
#include "train/checkpoint_drill.h"
#include "train/fault_stop.h"
#include "train/rank_devices.h"
#include "train/token_source.h"

namespace gpuaccept::fsdp {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::vector<int> all_ranks(int size) {
  std::vector<int> r(static_cast<std::size_t>(size));
  for (int i = 0; i < size; ++i) r[static_cast<std::size_t>(i)] = i;
  return r;
}

class FsdpLoraPhase {
 public:
  FsdpLoraPhase(PhaseContext& ctx, const FsdpConfig& config)
      : ctx_(ctx), world_(ctx.world), config_(config), results_(ctx.results) {}
  void run();

 private:
  PhaseContext& ctx_;
  World& world_;
  const FsdpConfig& config_;
  ResultWriter& results_;
  RankDevice device_;
  std::string stage_ = "setup";

  // fsdp_lora.checkpoint_dir's checkpoint, opened and checked before any GPU work; empty: the
  // random base.
  std::optional<train::SafetensorsCheckpoint> base_checkpoint_;

  // What the training stages (3-6) build on the GPU. Members, not a stage's locals, so that
  // after a fault they outlive the stage that threw and are never freed (abandon_gpu_objects():
  // a kernel that ignored the abort would make cudaFree wait forever; the process ends soon
  // after).
  std::unique_ptr<RankRuntime> rt_;
  std::unique_ptr<train::TokenSource> data_;
  std::unique_ptr<CudaStream> init_stream_;         // filling and checksumming bases
  std::unique_ptr<gpu::FsdpWeights> weights_;       // the base sharded over all ranks
  std::unique_ptr<gpu::QwenLoraModel> model_;
  std::unique_ptr<FsdpTrainer> trainer_;  // while it exists: its run in progress, for a fault's record
  std::unique_ptr<FsdpSummary> summary_;
  std::unique_ptr<gpu::FsdpWeights> whole_;         // the whole base on this GPU: equivalence, single_gpu
  std::unique_ptr<gpu::FsdpWeights> node_weights_;  // the base sharded over this node's ranks
  std::shared_ptr<NcclComm> node_comm_;             // after a fault it is aborted before it is dropped
  // The checkpoint drill (train/checkpoint_drill.h): its pinned staging buffer must not be freed
  // after a fault either (cudaFreeHost waits for the device, stuck behind a hung rank's collective).
  std::unique_ptr<train::CheckpointDrill> drill_;
  std::uint64_t base_before_ = 0;  // the frozen base's checksum before training: must not change

  void run_checks();
  void open_base_checkpoint();
  void fill_base(gpu::FsdpWeights& weights, const std::string& what);
  void skip_all(const std::string& why);
  train::CheckpointManifest checkpoint_header() const;
  void summarize();
  bool check_memory_plan(const MemoryPlan& plan);
  void gradient_check();

  // The training stages, in the order train() runs them.
  void train(const MemoryPlan& plan);
  void start_training();
  void map_peer_shards();
  void unmap_peer_shards();
  FsdpTrainSpec all_gpus_spec() const;
  FsdpRun train_on_all_gpus(const MemoryPlan& plan);
  void resume_from_checkpoint(const FsdpRun& main_run);
  std::string place_whole_base();
  void replay_on_one_gpu(const LoraSnapshot& sharded, const std::string& no_room);
  void measure_scaling(const std::string& no_room);
  void run_each_node();
  void abandon_gpu_objects();

  // Equivalence: the all-GPU run's first steps against rank 0 alone replaying every rank's
  // micro-batches; scaling: the all-GPU run against each GPU alone and each node.
  int equivalence_steps() const { return std::min(config_.equivalence_steps, config_.steps); }
  bool equivalence() const { return world_.size() > 1 && equivalence_steps() > 0; }
  bool scaling() const { return world_.size() > 1 && config_.scaling_steps > 0; }

  // rank_room.h's collective checks with fsdp_lora.memory_headroom_gib.
  std::string room_for(std::uint64_t bytes, const std::string& what) {
    return gpu_room_for(world_, bytes, config_.memory_headroom_gib, what);
  }
  std::string host_room_for(std::uint64_t bytes, const std::string& what) {
    return fsdp::host_room_for(world_, bytes, config_.memory_headroom_gib, what);
  }
  BaseFootprint base_bytes(const ShardPlan& plan) const {
    return base_footprint(plan, config_.prefetch_layers, config_.offload_cpu());
  }
  void handle_fault(const std::string& what, const Fault* fault);
};

// What a checkpoint must match to be resumed by this configuration: the model, its LoRA and
// initialisation, and the batch each step sees (data and dropout follow the step number).
train::CheckpointManifest FsdpLoraPhase::checkpoint_header() const {
  train::CheckpointManifest h;
  h.phase = "fsdp-lora";
  h.state = {{"model", config_.model},
             {"layers", std::to_string(config_.layers)},
             {"lora", fmt::format("rank {} alpha {} dropout {} targets {}", config_.lora.rank, config_.lora.alpha,
                                  config_.lora.dropout, config_.lora_targets)},
             {"seed", std::to_string(config_.seed)},
             {"micro_batch", std::to_string(config_.micro_batch)},
             {"seq_len", std::to_string(config_.seq_len)},
             {"grad_accum", std::to_string(config_.grad_accum)},
             {"base", config_.checkpoint_dir.empty() ? "random" : config_.checkpoint_dir},
             {"base_saved", config_.checkpoint.include_base ? "shards" : "no"},
             {"data", config_.data_file.empty() ? "markov" : config_.data_file}};
  return h;
}

// Collective: every rank opens and checks the checkpoint on its own node's view of the path (a
// node without the shared filesystem fails alone), then all learn every rank's verdict, so all
// end together with an InputError naming each failing rank, or all go on.
void FsdpLoraPhase::open_base_checkpoint() {
  if (config_.checkpoint_dir.empty()) return;
  const auto t0 = std::chrono::steady_clock::now();
  std::string mine;
  try {
    base_checkpoint_.emplace(config_.checkpoint_dir);
    check_base_checkpoint(*base_checkpoint_, config_.model_config());
  } catch (const InputError& e) {
    mine = e.what();
  }
  const std::vector<std::string> refused = reasons_by_rank(world_, mine);
  if (!refused.empty()) throw InputError(fmt::format("fsdp_lora.checkpoint_dir: {}", fmt::join(refused, "; ")));
  log_rank0("fsdp-lora: base from {} ({} files, every tensor of {} with {} layers there, {:.1f} s)",
            config_.checkpoint_dir, base_checkpoint_->files().size(), config_.model, config_.model_config().layers,
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

// The frozen base into `weights`: from the checkpoint (each rank reading its own pieces, a
// progress line a region from rank 0) or the seed's random weights.
void FsdpLoraPhase::fill_base(gpu::FsdpWeights& weights, const std::string& what) {
  cudaStream_t stream = *init_stream_;
  if (!base_checkpoint_) {
    weights.init_random(config_.seed, stream);
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const double gib = static_cast<double>(weights.plan().rank_base_bytes()) / kGiB;
  weights.init_from_checkpoint(*base_checkpoint_, stream, [&](int done, int total) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    log_rank0("fsdp-lora: {}: base read from the checkpoint, region {}/{} ({:.2f} GiB a rank): {:.1f}s elapsed, ~{:.1f}s left",
              what, done, total, gib, s, s / done * (total - done));
  });
}

void FsdpLoraPhase::skip_all(const std::string& why) {
  for (const char* test :
       {"memory_plan", "gradient_check", "training", "learning", "replicas", "equivalence", "scaling", "checkpoint_resume"})
    results_.check(test, Status::Skip, why);
}

// Rank 0 prints its records, one a line; every rank names its own failures, so a failing
// rank is visible in slurm-*.out without opening the results file.
void FsdpLoraPhase::summarize() {
  int counts[4] = {};
  std::string lines;
  for (const auto& r : results_.records()) {
    ++counts[static_cast<int>(r.status)];
    if (is_failure(r.status) && world_.rank() != 0)
      log_info("{} {} {}: {}", to_string(r.status), r.test, encode_params(r.params), r.message);
    std::string message = r.message.size() > 160 ? r.message.substr(0, 157) + "..." : r.message;
    lines += fmt::format("\n  {:<5} {:<15} {:<21} {:>12} {:<9} {} {}", to_string(r.status), r.test, r.metric,
                         r.has_value() ? fmt::format("{:.6g}", r.value) : std::string("-"), r.unit,
                         encode_params(r.params), message);
  }
  log_rank0("records of rank 0:{}", lines);
  log_info("{} PASS, {} FAIL, {} SKIP, {} ERROR on this rank", counts[0], counts[2], counts[1], counts[3]);
}

void FsdpLoraPhase::run() {
  run_checks();
  summarize();
}

void FsdpLoraPhase::run_checks() {
  open_base_checkpoint();
  device_ = choose_rank_device(world_);
  // Every rank takes part, with a GPU or not, so that all decide the same.
  const std::vector<RankInfo> ranks = train::exchange_rank_devices(world_, device_);
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    if (ranks[r].error.empty()) continue;
    const std::string why =
        ranks.size() == 1 ? ranks[r].error : fmt::format("rank {} on {}: {}", r, ranks[r].host, ranks[r].error);
    log_rank0("fsdp-lora: SKIP: {}", why);
    skip_all(why);
    return;
  }
  const GpuSharing sharing = find_gpu_sharing(ranks);
  if (!sharing.refused.empty()) log_rank0("fsdp-lora: {}", sharing.refused);
  else if (!sharing.joined.empty() && world_.rank() == 0) results_.job_check("gpu_sharing", Status::Fail, sharing.joined);

  // 1. Memory, before allocating anything.
  stage_ = "memory plan";
  const QwenConfig model = config_.model_config();
  const ShardPlan shards = make_shard_plan(model, world_.size());
  const MemoryPlan plan = plan_memory(model, config_.lora, shards, config_.micro_batch, config_.seq_len,
                                      config_.recompute, config_.offload_cpu(), config_.prefetch_layers,
                                      config_.grad_reduce == "reduce_scatter", config_.recompute_keep);
  if (!check_memory_plan(plan)) {
    for (const char* test : {"gradient_check", "training", "learning", "replicas", "equivalence", "scaling"})
      results_.check(test, Status::Skip, "not run: the memory plan does not fit (memory_plan)");
    return;
  }
  results_.checkpoint();
  train(plan);
}

// Each rank measures its own GPU's free memory; every rank learns every verdict, so all stop
// or all go on together.
bool FsdpLoraPhase::check_memory_plan(const MemoryPlan& plan) {
  std::size_t free = 0, total = 0;
  GPUACCEPT_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  const auto headroom = static_cast<std::uint64_t>(config_.memory_headroom_gib * kGiB);
  std::string refusal;
  try {
    plan.check_fits(free, headroom);
  } catch (const InputError& e) {
    refusal = e.what();
  }
  // Offload: the shards pinned on the host, every rank of the node at once (collective, as below).
  const std::string no_host_room =
      host_room_for(plan.base_shards_host_pinned,
                    fmt::format("the offloaded base shards ({:.2f} GiB a rank in pinned host memory)",
                                static_cast<double>(plan.base_shards_host_pinned) / kGiB));
  std::vector<std::string> refused = reasons_by_rank(world_, refusal);
  if (!no_host_room.empty()) {  // the same words on every rank: once in the log, on every rank's record
    refused.push_back(no_host_room);
    if (refusal.empty()) refusal = no_host_room;
  }
  const Params p{{"gpus", std::to_string(plan.world_size)}, {"model", config_.model},
                 {"layers", std::to_string(plan.layers)}, {"micro_batch", std::to_string(plan.micro_batch)},
                 {"seq_len", std::to_string(plan.seq_len)}};
  Record& r = results_.measure("memory_plan", "planned_gib", static_cast<double>(plan.total()) / kGiB, "GiB", p);
  r.status = refusal.empty() ? Status::Pass : Status::Fail;
  r.message = refusal.empty()
                  ? fmt::format("fits: {:.2f} GiB planned + {} GiB headroom of {:.2f} GiB free. {}",
                                static_cast<double>(plan.total()) / kGiB, config_.memory_headroom_gib,
                                static_cast<double>(free) / kGiB, plan.describe())
                  : refusal;
  if (!refused.empty()) log_rank0("fsdp-lora: memory plan FAIL: {}", fmt::join(refused, " | "));
  else log_rank0("fsdp-lora: memory plan per GPU: {}", plan.describe());
  return refused.empty();
}

void FsdpLoraPhase::gradient_check() {
  stage_ = "gradient check";
  const FsdpGradientCheck g = run_fsdp_gradient_check(config_.seed, world_.rank(), world_.size(), rt_->world_comm().get(),
                                                     config_.recompute, config_.offload_cpu());
  const LoraTensorError& worst = g.worst();
  const double loss_err = std::abs(g.loss_gpu - g.loss_cpu);
  const bool ok = loss_err <= config_.loss_tolerance && worst.rel_l2 <= config_.grad_tolerance;
  std::string detail;
  for (const auto& t : g.tensors) detail += fmt::format("{}{} {:.2e}", detail.empty() ? "" : ", ", t.name, t.rel_l2);
  const Params shape{{"model", fmt::format("tiny V{} C{} L{} NH{} NKV{} HD{} I{}", g.config.vocab, g.config.hidden,
                                           g.config.layers, g.config.heads, g.config.kv_heads, g.config.head_dim,
                                           g.config.intermediate)},
                     {"lora", fmt::format("rank {} alpha {} dropout {} on all seven", g.lora.rank, g.lora.alpha,
                                          g.lora.dropout)},
                     {"batch", fmt::format("{}x{}", g.B, g.T)},
                     {"shards", std::to_string(g.ranks)},
                     {"recompute", g.recompute ? "true" : "false"}};
  const std::string message = fmt::format(
      "base sharded over {} rank(s) and all-gathered, recompute {}; loss GPU {:.6f} vs CPU float64 {:.6f} (|diff| {:.2e}, tolerance "
      "{}); worst LoRA gradient {} relative L2 error {:.2e} (tolerance {}); per tensor: {}",
      g.ranks, g.recompute ? "on" : "off", g.loss_gpu, g.loss_cpu, loss_err, config_.loss_tolerance, worst.name, worst.rel_l2,
      config_.grad_tolerance, detail);
  results_.measure("gradient_check", "loss_abs_err", loss_err, "nats", shape).status =
      std::isfinite(loss_err) && loss_err <= config_.loss_tolerance ? Status::Pass : Status::Fail;
  Record& r = results_.measure("gradient_check", "max_rel_err", worst.rel_l2, "", shape);
  r.status = ok ? Status::Pass : Status::Fail;
  r.message = message;
  log_rank0("fsdp-lora: gradient check {}: {}", ok ? "PASS" : "FAIL", message);
}

// Stages 2-6 (fsdp_lora_run.h), each a function below in this order. Any fault (a rank that dies
// or hangs, a failed CUDA or NCCL call) ends them all the same way: the other ranks are told, what
// was measured stays recorded, and the GPU objects are left as they are.
void FsdpLoraPhase::train(const MemoryPlan& plan) {
  try {
    start_training();
    const FsdpRun main_run = train_on_all_gpus(plan);
    // Rank 0: the all-GPU run after equivalence_steps, taken before the resume overwrites it.
    const LoraSnapshot sharded = trainer_->snapshot();
    resume_from_checkpoint(main_run);
    const std::string no_room = place_whole_base();
    replay_on_one_gpu(sharded, no_room);
    measure_scaling(no_room);
    trainer_.reset();
    model_.reset();
    train::close_training_runtime(world_, rt_);
  } catch (const Fault& f) {
    handle_fault(f.what(), &f);
    abandon_gpu_objects();
  } catch (const std::exception& e) {
    // A failed CUDA/cuBLAS/NCCL call or a kernel launch: the same way out, so the other ranks
    // are told instead of waiting for their deadline in a collective.
    handle_fault(e.what(), nullptr);
    abandon_gpu_objects();
  }
}

// After a fault: never freed (the class comment on the members says why).
void FsdpLoraPhase::abandon_gpu_objects() {
  (void)drill_.release();
  (void)trainer_.release();
  (void)model_.release();
  (void)weights_.release();
  (void)whole_.release();
  (void)node_weights_.release();
  (void)rt_.release();
}

// 2. The gradient check, then everything the all-GPU run needs: the data, the base sharded over
// all ranks, the model, the trainer and the checkpoint drill.
void FsdpLoraPhase::start_training() {
  const QwenConfig model_config = config_.model_config();
  const int W = world_.size();
  stage_ = "initialisation";
  const RuntimeOptions deadlines{.timeout_s = config_.step_timeout_s};
  rt_ = train::open_training_runtime(world_, results_, "fsdp-lora", device_.index, deadlines, stage_);
  {
    auto guard = rt_->guard({"fsdp-lora gradient check", all_ranks(W), -1}, config_.step_timeout_s);
    if (config_.gradient_check) gradient_check();
    else results_.check("gradient_check", Status::Skip, "fsdp_lora.gradient_check is false");
  }
  results_.checkpoint();

  stage_ = "initialisation of the training run";
  data_ = config_.data_file.empty()
              ? train::markov_source(config_.data_vocab, config_.seed, config_.data_successors)
              : train::file_source(config_.data_file, model_config.vocab, config_.seq_len);
  const ShardPlan shards = make_shard_plan(model_config, W);
  init_stream_ = std::make_unique<CudaStream>();
  weights_ = std::make_unique<gpu::FsdpWeights>(shards, world_.rank(), W > 1 ? rt_->world_comm().get() : nullptr,
                                                config_.prefetch_layers, config_.offload_cpu());
  fill_base(*weights_, "all GPUs");
  model_ = std::make_unique<gpu::QwenLoraModel>(model_config, config_.lora, config_.micro_batch, config_.seq_len,
                                                gpu::ModelOptions{.matmul_autotune = config_.matmul_autotune,
                                                                  .logits_chunk = static_cast<int>(kLogitsChunkTokens),
                                                                  .recompute = config_.recompute,
                                                                  .recompute_keep = config_.recompute_keep});
  model_->set_weight_source(weights_.get());
  model_->set_final_norm(weights_->final_norm());
  init_stream_->synchronize();
  map_peer_shards();
  base_before_ = weights_->base_checksum(*init_stream_);
  log_rank0("fsdp-lora: {} ({} layers, {} base parameters, {} LoRA parameters rank {} on {}), {} x {} tokens per GPU "
            "per micro-step, {} micro-steps per step, {} GPU(s); base shard {:.2f} GiB per GPU, gather buffers {:.2f} "
            "GiB, model buffers {:.2f} GiB; attention: {}; gathers: {}; data: {}",
            config_.model, model_config.layers, base_parameter_count(model_config),
            lora_parameter_count(model_config, config_.lora), config_.lora.rank, config_.lora_targets,
            config_.micro_batch, config_.seq_len, config_.grad_accum, W,
            static_cast<double>(shards.rank_base_bytes()) / kGiB,
            static_cast<double>(weights_->device_bytes() - shards.rank_base_bytes()) / kGiB,
            static_cast<double>(model_->device_bytes()) / kGiB, model_->attention_description(),
            weights_->gather_engine(), data_->describe());

  // LoRA as PEFT starts it (A random, B zero), the same on every rank (one seed). The trainer's
  // micro-batch capacity covers the equivalence run's replay of every rank's micro-batches.
  const std::vector<float> lora_init =
      model_->lora_layout().flatten(init_lora(model_config, config_.lora, config_.seed, /*b_zero=*/true));
  // Each run's timed steps sampled through NVML: the clocks each figure ran at (none without NVML).
  trainer_ = std::make_unique<FsdpTrainer>(*model_, *weights_, config_, *data_, *rt_, lora_init,
                                           equivalence() ? W * config_.grad_accum : config_.grad_accum,
                                           Nvml::instance().device_by_pci_bus_id(device_.pci_bus_id));
  if (W > 1) {
    const std::vector<LoraBucket>& buckets = trainer_->grad_buckets();
    log_rank0("fsdp-lora: LoRA gradients all-reduced in {} bucket(s) of about {} MiB during the backward, the "
              "first after layer {}, the last layer 0's alone ({:.1f} MiB)",
              buckets.size(), config_.bucket_mib, buckets.front().low_layer,
              static_cast<double>(buckets.back().count * sizeof(float)) / (1 << 20));
  }
  summary_ = std::make_unique<FsdpSummary>(ctx_, config_, device_, data_->loss_floor());

  // The checkpoint drill (train/checkpoint_drill.h): the LoRA state (with include_base the base's
  // shards too) saved during the main run, restored and resumed after it.
  if (config_.checkpoint.enabled) {
    std::vector<train::DeviceStateTensor> state = trainer_->state();
    if (config_.checkpoint.include_base) {
      const gpu::FsdpWeights::Parts base = weights_->parts();
      const std::size_t n = static_cast<std::size_t>(W);
      state.push_back({"base.layers", base.layers, base.layers_elems * n, train::Dtype::bf16, /*sharded=*/true});
      state.push_back({"base.embedding", base.embedding, base.vocab_elems * n, train::Dtype::bf16, true});
      state.push_back({"base.head", base.head, base.vocab_elems * n, train::Dtype::bf16, true});
      state.push_back({"base.final_norm", base.final_norm, base.final_norm_elems, train::Dtype::bf16, false});
    }
    drill_ = std::make_unique<train::CheckpointDrill>(world_, results_, config_.checkpoint, checkpoint_header(),
                                                      std::move(state));
  }
}

// Copy-engine gathers (src/cuda/peer_memory.h), once every rank's shards are complete. Collective
// (under the watchdog: a rank that never comes is a hang); the same outcome on every rank.
void FsdpLoraPhase::map_peer_shards() {
  const int W = world_.size();
  if (config_.gather != "copy_engine" || W == 1) return;
  auto guard =
      rt_->guard({"fsdp-lora: mapping the other ranks' base shards", all_ranks(W), -1}, config_.step_timeout_s);
  const std::string why = weights_->use_copy_engine(world_.node_count() == 1);
  if (why.empty())
    log_rank0("fsdp-lora: gathers by copy engine: every rank maps the other {} ranks' shards (CUDA IPC) and copies "
              "them out of their GPUs, no NCCL kernel beside the compute",
              W - 1);
  else
    log_rank0("fsdp-lora: gathers by NCCL: fsdp_lora.gather is copy_engine, but {}", why);
}

// Before a rank writes its shards (a restore) or frees them, no other rank may be reading them.
// Collective, under the watchdog; nothing to do without the copy engine or its shards.
void FsdpLoraPhase::unmap_peer_shards() {
  if (!weights_) return;
  auto guard = rt_->guard({"fsdp-lora: unmapping the other ranks' base shards", all_ranks(world_.size()), -1},
                          config_.step_timeout_s);
  weights_->stop_copy_engine();
}

// The all-GPU run: every rank on its own micro-batches, the base sharded over all of them.
FsdpTrainSpec FsdpLoraPhase::all_gpus_spec() const {
  FsdpTrainSpec all;
  all.label = "all";
  all.comm = world_.size() > 1 ? rt_->world_comm().get() : nullptr;
  all.comm_ranks = all_ranks(world_.size());
  all.rank_in_comm = world_.rank();
  all.steps = config_.steps;
  all.log_progress = true;
  return all;
}

// 3-4. Training on every GPU (the checkpoint drill saving on the way), then the replicas compared
// bit for bit, the frozen base checked unchanged, and the memory measured against the plan.
FsdpRun FsdpLoraPhase::train_on_all_gpus(const MemoryPlan& plan) {
  stage_ = "training on all GPUs";
  FsdpTrainSpec all = all_gpus_spec();
  all.fault = &config_.debug_fault;
  all.after_step = [this](int s) {
    if (drill_) drill_->after_main_step(s);
  };
  // Rank 0 keeps the LoRA state after the steps the equivalence run replays.
  if (equivalence() && world_.rank() == 0) all.snapshot_step = equivalence_steps();
  FsdpRun main_run = trainer_->run(all);
  summary_->record_training(main_run);
  results_.checkpoint();

  stage_ = "replica comparison";
  summary_->record_replicas(trainer_->lora_master());
  const std::uint64_t base_after = weights_->base_checksum(*init_stream_);
  const double shard_gib = static_cast<double>(weights_->plan().rank_base_bytes()) / kGiB;
  results_.check("base_unchanged", base_before_ == base_after ? Status::Pass : Status::Fail,
                 base_before_ == base_after
                     ? fmt::format("this rank's base shards ({:.2f} GiB) hold the same bits after training as "
                                   "before (checksum {:016x})",
                                   shard_gib, base_after)
                     : fmt::format("this rank's base shards changed during training (checksum {:016x} before, "
                                   "{:016x} after): the frozen base was written",
                                   base_before_, base_after));
  summary_->record_memory(plan, main_run, static_cast<double>(model_->device_bytes()),
                          static_cast<double>(weights_->device_bytes()));
  results_.checkpoint();
  return main_run;
}

// 5. The checkpoint drill's end: the filesystem's yardstick, the restore and the resumed steps,
// on the all-GPU run's sharded base (before it is freed for the whole one). The resumed steps
// gather by NCCL, so their bit-equality with the main run also checks the copy engine's gathers
// against NCCL's.
void FsdpLoraPhase::resume_from_checkpoint(const FsdpRun& main_run) {
  unmap_peer_shards();  // a restore writes this rank's shards
  if (!drill_) {
    if (world_.rank() == 0)
      train::record_resume_skipped(results_, config_.steps < 2 ? "the main run has one step: nothing to resume"
                                                               : "fsdp_lora.checkpoint.enabled is false");
    results_.checkpoint();
    return;
  }
  std::vector<train::StepRecord> main_steps;
  for (const FsdpStepRecord& r : main_run.steps) main_steps.push_back(r.time);
  drill_->finish(rt_->world_comm().get(), *rt_, config_.step_timeout_s, main_steps, [&] {
    trainer_->state_restored();
    FsdpTrainSpec resume = all_gpus_spec();
    resume.label = "resume";
    resume.first_step = drill_->save_step() + 1;
    resume.steps = drill_->last_step();
    resume.resume = true;
    std::vector<train::StepRecord> resumed;
    for (const FsdpStepRecord& r : trainer_->run(resume).steps) resumed.push_back(r.time);
    return resumed;
  }, stage_);
  results_.checkpoint();
}

// 6. Equivalence and scaling run the same model (its buffers are the base's shape, not the
// sharding's) over other bases. The all-GPU run's sharded base is freed first, so that the whole
// base fits beside the model's buffers where the memory allows: one GPU's training footprint (the
// 7B shape's 15.2 GB base fits beside the model on an 80 GB GPU). Returns why it does not fit on
// some rank (collective), or "".
std::string FsdpLoraPhase::place_whole_base() {
  unmap_peer_shards();
  weights_.reset();
  if (!equivalence() && !scaling()) return "";
  stage_ = "allocating the whole base on each GPU";
  const ShardPlan one = make_shard_plan(config_.model_config(), 1);
  const bool needed = scaling() || world_.rank() == 0;  // the equivalence run alone needs it on rank 0 only
  const BaseFootprint whole_bytes = base_bytes(one);
  const std::string what = fmt::format("the whole base on one GPU ({:.2f} GiB{}, for {})",
                                       static_cast<double>(one.rank_base_bytes()) / kGiB,
                                       config_.offload_cpu() ? " in pinned host memory" : "",
                                       scaling() ? "the equivalence and single_gpu runs" : "the equivalence run");
  std::string no_room = room_for(needed ? whole_bytes.gpu() : 0, what);
  if (no_room.empty()) no_room = host_room_for(needed ? whole_bytes.shards_host_pinned : 0, what);
  if (no_room.empty() && needed) {
    whole_ = std::make_unique<gpu::FsdpWeights>(one, 0, nullptr, config_.prefetch_layers, config_.offload_cpu());
    fill_base(*whole_, "the whole base on one GPU");
    init_stream_->synchronize();
  }
  return no_room;
}

// 6a. Equivalence: rank 0 alone, the whole base on its GPU, replays the all-GPU run's first steps
// (every rank's micro-batches as gradient accumulation); the others wait at the barrier.
void FsdpLoraPhase::replay_on_one_gpu(const LoraSnapshot& sharded, const std::string& no_room) {
  stage_ = "equivalence run";
  const int W = world_.size(), accum = config_.grad_accum;
  if (!equivalence()) {
    results_.check("equivalence", Status::Skip,
                   W == 1 ? "needs at least 2 ranks: with one rank the base is not sharded, the all-GPU run is "
                            "already one GPU holding everything"
                          : "fsdp_lora.equivalence_steps is 0");
  } else if (!no_room.empty()) {
    results_.check("equivalence", Status::Skip, "not run: " + no_room);
    log_rank0("fsdp-lora: equivalence SKIP: {}", no_room);
  } else {
    FsdpRun solo;
    LoraSnapshot replay;
    if (world_.rank() == 0) {
      log_rank0("fsdp-lora: equivalence: rank 0 alone, the whole base on its GPU, replays the {} ranks' {} "
                "micro-batch(es) a step for {} steps (the all-GPU run's first steps: the same data, LoRA "
                "initialisation and dropout masks)",
                W, W * accum, equivalence_steps());
      FsdpTrainSpec one;
      one.label = "equivalence";
      one.comm_ranks = {0};
      one.steps = equivalence_steps();
      one.shards = replay_shards(W, accum);
      one.weights = whole_.get();
      one.snapshot_step = equivalence_steps();
      one.log_progress = true;
      solo = trainer_->run(one);
      replay = trainer_->snapshot();
    }
    summary_->record_equivalence(solo, replay, sharded, trainer_->lora_init(), equivalence_steps());  // rank 0
    world_.barrier();  // the other ranks wait here for rank 0's replay
  }
  results_.checkpoint();
}

// 6b. Scaling: every GPU alone at once, the whole base on it (no gathers, no all-reduce): a
// per-GPU figure that also names a slow GPU, each rank on its own shards. Then each node, when
// the world spans several with more than one rank each.
void FsdpLoraPhase::measure_scaling(const std::string& no_room) {
  if (!scaling()) {
    results_.check("scaling", Status::Skip,
                   world_.size() == 1 ? "one GPU has nothing to scale to: the all-GPU run is the single-GPU figure"
                                      : "fsdp_lora.scaling_steps is 0");
    return;
  }
  if (!no_room.empty()) {
    results_.check("scaling", Status::Skip, "not run: " + no_room);
    log_rank0("fsdp-lora: scaling SKIP: {}", no_room);
    return;
  }
  stage_ = "scaling: every GPU alone";
  FsdpTrainSpec alone;
  alone.label = "single_gpu";
  alone.comm_ranks = {world_.rank()};
  alone.steps = config_.scaling_steps;
  alone.shards = rank_shards(world_.rank(), config_.grad_accum);
  alone.weights = whole_.get();
  alone.log_progress = true;
  summary_->record_scale(trainer_->run(alone));
  whole_.reset();
  results_.checkpoint();
  // Every rank must agree on whether to split (a collective): decided from the world's shape.
  if (world_.node_count() > 1 && world_.size() > world_.node_count()) run_each_node();
  summary_->record_scaling();
}

// 6c. Each node on its own communicator, the base sharded over its ranks.
void FsdpLoraPhase::run_each_node() {
  stage_ = "scaling: each node";
  const int W = world_.size(), rank = world_.rank();
  const auto nodes = world_.allgather_string(std::to_string(world_.node_index()));
  std::vector<int> node_ranks;  // the world ranks on my node, in rank order (the split's key)
  for (int r = 0; r < W; ++r)
    if (nodes[static_cast<std::size_t>(r)] == nodes[static_cast<std::size_t>(rank)]) node_ranks.push_back(r);
  const int index = static_cast<int>(std::find(node_ranks.begin(), node_ranks.end(), rank) - node_ranks.begin());
  const int n = static_cast<int>(node_ranks.size());
  const ShardPlan node_plan = make_shard_plan(config_.model_config(), n);
  const BaseFootprint node_bytes = base_bytes(node_plan);
  const std::string node_what =
      fmt::format("the base sharded over the node's {} rank(s) with its gather buffers ({:.2f} GiB on the GPU{})", n,
                  static_cast<double>(node_bytes.gpu()) / kGiB,
                  node_bytes.shards_host_pinned > 0
                      ? fmt::format(", {:.2f} GiB pinned", static_cast<double>(node_bytes.shards_host_pinned) / kGiB)
                      : "");
  std::string no_node_room = room_for(node_bytes.gpu(), node_what);
  if (no_node_room.empty()) no_node_room = host_room_for(node_bytes.shards_host_pinned, node_what);
  if (!no_node_room.empty()) {
    if (rank == 0)
      results_.check("scaling", Status::Skip, "node run not run: " + no_node_room,
                     {{"from", "single_gpu"}, {"to", "node"}});
    log_rank0("fsdp-lora: scaling: node run SKIP: {}", no_node_room);
    return;
  }
  node_comm_ = rt_->split(rt_->world_comm(), world_.node_index(), rank, {"ncclCommSplit by node", all_ranks(W), -1});
  node_weights_ = std::make_unique<gpu::FsdpWeights>(node_plan, index, node_comm_->get(), config_.prefetch_layers,
                                                     config_.offload_cpu());
  fill_base(*node_weights_, "node");
  init_stream_->synchronize();
  FsdpTrainSpec node;
  node.label = "node";
  node.comm = node_comm_->get();
  node.comm_ranks = node_ranks;
  node.rank_in_comm = index;
  node.steps = config_.scaling_steps;
  node.shards = rank_shards(rank, config_.grad_accum);
  node.weights = node_weights_.get();
  node.log_progress = true;
  summary_->record_scale(trainer_->run(node));
  node_weights_.reset();  // waits for its gathers in flight before the communicator goes
  rt_->release(node_comm_, {"ncclCommDestroy of the node communicator", {}, -1});
}

// train/fault_stop.h, as ddp: tell the others, record what this rank completed.
void FsdpLoraPhase::handle_fault(const std::string& what, const Fault* fault) {
  train::stop_after_fault(world_, results_, rt_.get(), fault, what, "fsdp-lora", stage_, [&] {
    std::string completed = "no training run had started";
    if (trainer_) {
      const FsdpRun& run = trainer_->progress();
      completed = fmt::format("run '{}' had completed {} steps", run.label, run.steps.size());
      for (const FsdpStepRecord& s : run.steps)
        results_.measure("loss_curve", "loss", s.time.loss, "nats",
                         {{"step", std::to_string(s.time.step)}, {"run", run.label}, {"scope", "this rank"}});
    }
    return completed;
  });
}

}  // namespace

void run_fsdp_lora_phase(PhaseContext& ctx, const FsdpConfig& config) { FsdpLoraPhase(ctx, config).run(); }

}  // namespace gpuaccept::fsdp
