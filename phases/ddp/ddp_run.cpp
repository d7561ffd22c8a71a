#include "ddp/ddp_run.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include <cuda_runtime.h>
#include <fmt/format.h>

#include "common/log.h"
#include "cuda/cuda_check.h"
#include "cuda/rank_device.h"
#include "ddp/cpu_reference.h"
#include "ddp/gradient_check.h"
#include "ddp/gpu/gpt_model.h"
#include "ddp/run_summary.h"
#include "ddp/trainer.h"
#include "hw/nvml.h"
#include "cuda/rank_info.h"
#include "cuda/rank_runtime.h"
#include "train/checkpoint_drill.h"
#include "train/fault_stop.h"
#include "train/rank_devices.h"
#include "train/token_source.h"

namespace gpuaccept::ddp {

namespace {

std::vector<int> all_ranks(int size) {
  std::vector<int> r(static_cast<std::size_t>(size));
  for (int i = 0; i < size; ++i) r[static_cast<std::size_t>(i)] = i;
  return r;
}

// The data shards of `rank`: one per micro-batch, distinct across ranks.
std::vector<int> shards_of(int rank, int accum) {
  std::vector<int> s;
  for (int a = 0; a < accum; ++a) s.push_back(rank * accum + a);
  return s;
}

class DdpPhase {
 public:
  DdpPhase(PhaseContext& ctx, const DdpConfig& config)
      : ctx_(ctx), world_(ctx.world), config_(config), results_(ctx.results) {}
  void run();

 private:
  PhaseContext& ctx_;
  World& world_;
  const DdpConfig& config_;
  ResultWriter& results_;
  RankDevice device_;
  std::string stage_ = "setup";
  int steps_done_ = 0;

  void skip_all(const std::string& why);
  train::CheckpointManifest checkpoint_header() const;
  void record_gpu_sharing(const std::vector<RankInfo>& ranks);
  void gradient_check();
  void train(const train::TokenSource& data);
  void map_gradient_buckets(Trainer& trainer, RankRuntime& rt);
  void handle_fault(const std::string& what, const Fault* fault, RankRuntime* rt);
  const Trainer* trainer_ = nullptr;  // while it exists: its run in progress, for a fault's record
};

void DdpPhase::skip_all(const std::string& why) {
  for (const char* test : {"gradient_check", "training", "learning", "replicas", "equivalence", "scaling", "checkpoint_resume"})
    results_.check(test, Status::Skip, why);
}

// What a checkpoint must match to be resumed by this configuration: the model and its
// initialisation, and the batch each step sees (the data follows the step number).
train::CheckpointManifest DdpPhase::checkpoint_header() const {
  train::CheckpointManifest h;
  h.phase = "ddp";
  h.state = {{"model", config_.model},
             {"seed", std::to_string(config_.seed)},
             {"micro_batch", std::to_string(config_.micro_batch)},
             {"seq_len", std::to_string(config_.seq_len)},
             {"grad_accum", std::to_string(config_.grad_accum)},
             {"data", config_.data_file.empty() ? "markov" : config_.data_file}};
  return h;
}

void DdpPhase::run() {
  device_ = choose_rank_device(world_);
  // Every rank takes part, with a GPU or not, so that all of them decide the same: one rank
  // going on alone would wait for the others in NCCL's initialisation.
  const std::vector<RankInfo> ranks = train::exchange_rank_devices(world_, device_);
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    if (ranks[r].error.empty()) continue;
    const std::string why =
        ranks.size() == 1 ? ranks[r].error : fmt::format("rank {} on {}: {}", r, ranks[r].host, ranks[r].error);
    log_rank0("ddp: SKIP: {}", why);
    skip_all(why);
    return;
  }
  record_gpu_sharing(ranks);
  if (config_.gradient_check) gradient_check();
  else results_.check("gradient_check", Status::Skip, "ddp.gradient_check is false");
  results_.checkpoint();

  std::unique_ptr<train::TokenSource> data;
  const GptConfig model = preset_by_name(config_.model);
  data = config_.data_file.empty() ? train::markov_source(config_.data_vocab, config_.seed, config_.data_successors)
                                   : train::file_source(config_.data_file, model.vocab, config_.seq_len);
  log_rank0("ddp: {} ({} parameters), {} x {} tokens per GPU per micro-step, {} micro-steps per step, data: {}",
            config_.model, parameter_count(model), config_.micro_batch, config_.seq_len, config_.grad_accum,
            data->describe());
  train(*data);
}

// Ranks on one GPU: NCCL refuses them at init (the training record then says so), unless
// each rank has its own NCCL_HOSTID (tests/gpu/ranks_on_one_gpu.sh); then training runs,
// but its throughput is not a GPU's, and a FAIL says why.
void DdpPhase::record_gpu_sharing(const std::vector<RankInfo>& ranks) {
  const GpuSharing sharing = find_gpu_sharing(ranks);
  if (!sharing.refused.empty()) log_rank0("ddp: {}", sharing.refused);
  else if (!sharing.joined.empty() && world_.rank() == 0) {
    results_.job_check("gpu_sharing", Status::Fail, sharing.joined);
    log_rank0("ddp: gpu_sharing FAIL: {}", sharing.joined);
  }
}

void DdpPhase::gradient_check() {
  stage_ = "gradient check";
  // Both ways the model can run: with cuBLASLt's residual and GELU epilogues and flash
  // attention (what training uses where available), and with separate kernels and
  // attention through GEMMs and a softmax kernel.
  for (const bool fast : {true, false}) {
    const GradientCheck g = run_gradient_check(config_.seed, {.allow_fusion = fast, .flash_attention = fast});
    const auto worst = std::max_element(g.tensors.begin(), g.tensors.end(), [](const TensorError& a, const TensorError& b) {
      return a.rel_l2 < b.rel_l2;
    });
    const double loss_err = std::abs(g.loss_gpu - g.loss_cpu);
    const bool ok = loss_err <= config_.loss_tolerance && worst->rel_l2 <= config_.grad_tolerance &&
                    g.padding_grad_max == 0.0;
    std::string detail;
    for (const auto& t : g.tensors) detail += fmt::format("{}{} {:.2e}", detail.empty() ? "" : ", ", t.name, t.rel_l2);
    const Params shape{{"model", fmt::format("V{} T{} L{} NH{} C{}", g.config.vocab, g.config.max_seq, g.config.layers,
                                             g.config.heads, g.config.channels)},
                       {"batch", fmt::format("{}x{}", g.B, g.T)},
                       {"epilogues", g.fusions},
                       {"attention", g.attention}};
    const std::string message = fmt::format(
        "loss GPU {:.6f} vs CPU float64 {:.6f} (|diff| {:.2e}, tolerance {}); worst gradient {} relative L2 error "
        "{:.2e} (tolerance {}); padding rows' gradient max {:.1e} (must be 0); matmul epilogues: {}; attention: {}; "
        "per tensor: {}",
        g.loss_gpu, g.loss_cpu, loss_err, config_.loss_tolerance, worst->name, worst->rel_l2, config_.grad_tolerance,
        g.padding_grad_max, g.fusions, g.attention, detail);
    results_.measure("gradient_check", "loss_abs_err", loss_err, "nats", shape).status =
        loss_err <= config_.loss_tolerance ? Status::Pass : Status::Fail;
    Record& r = results_.measure("gradient_check", "max_rel_err", worst->rel_l2, "", shape);
    r.status = ok ? Status::Pass : Status::Fail;
    r.message = message;
    log_rank0("ddp: gradient check ({}, {}) {}: {}", g.fusions, g.attention, ok ? "PASS" : "FAIL", message);

    const bool accumulates = g.accumulated.rel_l2 <= kAccumulateTolerance;
    Record& a = results_.measure("gradient_check", "accumulate_rel_err", g.accumulated.rel_l2, "", shape);
    a.status = accumulates ? Status::Pass : Status::Fail;
    a.message = fmt::format(
        "the same batch's backward again, accumulating as a step's later micro-batches do: worst tensor {}, "
        "relative L2 error {:.2e} against twice the first backward's gradient (tolerance {:.0e}: the second "
        "backward's matmuls may sum in another order, about 1e-6; one that overwrites or adds twice is off by 0.5)",
        g.accumulated.name, g.accumulated.rel_l2, kAccumulateTolerance);
    log_rank0("ddp: gradient accumulation ({}, {}) {}: {}", g.fusions, g.attention, accumulates ? "PASS" : "FAIL",
              a.message);
  }
}

// ddp.all_reduce: copy_engine (gpu/gradient_sync.h): every rank maps the others' packed
// gradient buckets. Collective (under the watchdog: a rank that never comes is a hang); the same
// outcome on every rank, and NCCL, saying why, where the copy engine cannot be used.
void DdpPhase::map_gradient_buckets(Trainer& trainer, RankRuntime& rt) {
  const int W = world_.size();
  auto guard = rt.guard({"ddp: mapping the other ranks' gradient buckets", all_ranks(W), -1}, config_.step_timeout_s);
  const std::string why = world_.node_count() > 1 ? "the ranks span several nodes"
                                                  : trainer.use_copy_engine(rt.world_comm().get(), world_.rank(), W);
  if (why.empty())
    log_rank0("ddp: gradient buckets averaged by copy engine: every rank maps the other {} ranks' buckets (CUDA "
              "IPC), copies its share out of them, averages it and copies the others' averages back; NCCL only "
              "for one-float handshakes",
              W - 1);
  else
    log_rank0("ddp: gradient buckets averaged by NCCL: ddp.all_reduce is copy_engine, but {}", why);
}

void DdpPhase::train(const train::TokenSource& data) {
  const GptConfig model_config = preset_by_name(config_.model);
  const int W = world_.size(), rank = world_.rank();
  const bool equivalence = W > 1 && config_.equivalence_steps > 0;
  // Owned out here so that after a fault they outlive the try block: handle_fault reads
  // the trainer's progress, and none of them is freed (a kernel that ignored the abort
  // would make cudaFree wait forever; the process ends soon after).
  std::unique_ptr<RankRuntime> rt;
  std::unique_ptr<gpu::GptModel> model;
  std::unique_ptr<Trainer> trainer;
  // The checkpoint drill (train/checkpoint_drill.h): saved during the main run, restored and
  // resumed at the end of the phase. Out here with the others: its pinned staging buffer must
  // not be freed after a fault either (cudaFreeHost waits for the device, and a collective
  // stuck on a hung rank would make that wait for ever).
  std::unique_ptr<train::CheckpointDrill> drill;
  const auto abandon = [&] {
    (void)drill.release();
    (void)trainer.release();
    (void)model.release();
    (void)rt.release();
  };
  try {
    stage_ = "initialisation";
    log_rank0("ddp: initial weights (seed {})", config_.seed);
    std::vector<float> init = gpu::to_padded_master(model_config, init_params(model_config, config_.seed));

    const RuntimeOptions deadlines{.timeout_s = config_.step_timeout_s, .max_ctas = config_.comm_sms};
    rt = train::open_training_runtime(world_, results_, "ddp", device_.index, deadlines, stage_);

    model = std::make_unique<gpu::GptModel>(model_config, config_.micro_batch, config_.seq_len,
                                            gpu::ModelOptions{.flash_attention = config_.flash_attention,
                                                              .matmul_autotune = config_.matmul_autotune});
    log_rank0("ddp: matmul epilogues in use: {}; attention: {}; {:.2f} GiB of model buffers; gradients all-reduced "
              "in {}{}",
              model->fusions(), model->attention(), static_cast<double>(model->device_bytes()) / (1ull << 30),
              config_.grad_reduce,
              config_.comm_sms > 0 ? fmt::format(", {} SMs left to NCCL beside the backward pass", config_.comm_sms) : "");
    if (config_.cuda_graph && W == 1)
      log_rank0("ddp: each micro-batch's forward and backward replayed from CUDA graphs from a run's second step on "
                "(ddp.cuda_graph)");
    else if (config_.cuda_graph)
      log_rank0("ddp: ddp.cuda_graph is for a job of one GPU: here every run is launched kernel by kernel, the runs of "
                "each GPU alone too, so that the scaling figure compares like with like (the all-GPU run launches its "
                "gradient buckets from the host between layers)");
    const int max_micro = std::max(config_.grad_accum, equivalence ? W * config_.grad_accum : 1);
    // Sampled over the timed steps: the clocks each figure ran at (none without NVML).
    const std::optional<Nvml::Device> nvml_gpu = Nvml::instance().device_by_pci_bus_id(device_.pci_bus_id);
    trainer = std::make_unique<Trainer>(*model, config_, data, *rt, std::move(init), max_micro, nvml_gpu);
    trainer_ = trainer.get();
    RunSummary summary(ctx_, config_, *model, device_, data.loss_floor());
    if (W > 1 && config_.all_reduce == "copy_engine") map_gradient_buckets(*trainer, *rt);
    if (config_.checkpoint.enabled)
      drill = std::make_unique<train::CheckpointDrill>(world_, results_, config_.checkpoint, checkpoint_header(),
                                                       trainer->state());

    // 2. Training on every GPU.
    stage_ = "training on all GPUs";
    TrainSpec all{"all", rt->world_comm().get(), all_ranks(W), config_.steps, shards_of(rank, config_.grad_accum), true,
                  &config_.debug_fault};
    all.after_step = [&](int s) {
      if (drill) drill->after_main_step(s);
    };
    const TrainRun main_run = trainer->run(all);
    steps_done_ = static_cast<int>(main_run.steps.size());
    summary.record_training(main_run);
    results_.checkpoint();

    // 3. Replicas: identical weights everywhere, bit for bit.
    stage_ = "replica comparison";
    summary.record_replicas(trainer->master_weights());

    // 4. The checkpoint: the filesystem's yardstick, the restore, the resumed steps.
    if (drill) {
      drill->finish(rt->world_comm().get(), *rt, config_.step_timeout_s, main_run.steps, [&] {
        trainer->state_restored();
        TrainSpec resume{"resume", rt->world_comm().get(), all_ranks(W), drill->last_step(),
                         shards_of(rank, config_.grad_accum), true};
        resume.first_step = drill->save_step() + 1;
        resume.resume = true;
        return trainer->run(resume).steps;
      }, stage_);
    } else if (rank == 0) {
      train::record_resume_skipped(results_, config_.steps < 2 ? "the main run has one step: nothing to resume"
                                       : "ddp.checkpoint.enabled is false");
    }
    results_.checkpoint();

    // 5. Equivalence: rank 0 alone, every rank's shards as accumulation steps.
    if (equivalence) {
      stage_ = "equivalence run";
      TrainRun solo;
      if (rank == 0) {
        std::vector<int> shards;
        for (int r = 0; r < W; ++r)
          for (int s : shards_of(r, config_.grad_accum)) shards.push_back(s);
        log_rank0("ddp: equivalence: rank 0 alone replays the {} ranks' batches for {} steps", W, config_.equivalence_steps);
        solo = trainer->run({"equivalence", nullptr, {0}, std::min(config_.equivalence_steps, config_.steps), shards, true});
      }
      summary.record_equivalence(solo);  // rank 0 compares with the training run's first steps
      world_.barrier();                  // the scaling runs start together
    } else {
      results_.check("equivalence", Status::Skip,
                     W == 1 ? "one rank: nothing to compare a single GPU with" : "ddp.equivalence_steps is 0");
    }
    results_.checkpoint();

    // 6. Scaling: the same per-GPU batch on each GPU alone, then each node.
    if (config_.scaling_steps > 0 && W > 1) {
      stage_ = "scaling: every GPU alone";
      summary.record_scale(trainer->run({"single_gpu", nullptr, {rank}, config_.scaling_steps,
                                        shards_of(rank, config_.grad_accum), true}));
      // Every rank must agree on whether to split (a collective): decide from the world's
      // shape, not from this node's rank count, which may differ between nodes.
      if (world_.node_count() > 1 && W > world_.node_count()) {
        stage_ = "scaling: each node";
        const auto nodes = world_.allgather_string(std::to_string(world_.node_index()));
        std::vector<int> node_ranks;  // the world ranks on my node
        for (int r = 0; r < W; ++r)
          if (nodes[static_cast<std::size_t>(r)] == nodes[static_cast<std::size_t>(rank)]) node_ranks.push_back(r);
        auto node_comm = rt->split(rt->world_comm(), world_.node_index(), rank,
                                   {"ncclCommSplit by node", all_ranks(W), -1});
        summary.record_scale(trainer->run({"node", node_comm->get(), node_ranks, config_.scaling_steps,
                                          shards_of(rank, config_.grad_accum), true}));
        rt->release(node_comm, {"ncclCommDestroy of the node communicator", {}, -1});
      }
      summary.record_scaling();
    } else {
      results_.check("scaling", Status::Skip,
                     W == 1 ? "one GPU: no scaling to measure" : "ddp.scaling_steps is 0");
    }
    summary.record_memory();
    if (W > 1 && config_.all_reduce == "copy_engine") {
      // Before any rank frees its buckets, no other may still copy out of them.
      auto guard = rt->guard({"ddp: unmapping the other ranks' gradient buckets", all_ranks(W), -1},
                             config_.step_timeout_s);
      trainer->stop_copy_engine();
    }
    trainer_ = nullptr;
    trainer.reset();
    model.reset();
    train::close_training_runtime(world_, rt);
  } catch (const Fault& f) {
    handle_fault(f.what(), &f, rt.get());
    abandon();
  } catch (const std::exception& e) {
    // A failed CUDA/cuBLAS/NCCL call (CallError) or a kernel launch: the same way out, so the
    // other ranks are told instead of waiting for their deadline in a collective.
    handle_fault(e.what(), nullptr, rt.get());
    abandon();
  }
}

void DdpPhase::handle_fault(const std::string& what, const Fault* fault, RankRuntime* rt) {
  train::stop_after_fault(world_, results_, rt, fault, what, "ddp", stage_, [&] {
    // What this rank completed of the run that broke: its own loss per step.
    std::string completed = "no training run had started";
    if (trainer_) {
      const TrainRun& run = trainer_->progress();
      completed = fmt::format("run '{}' had completed {} steps", run.label, run.steps.size());
      if (run.label != "all") completed += fmt::format(", the all-GPU run {}", steps_done_);
      for (const StepRecord& s : run.steps)
        results_.measure("loss_curve", "loss", s.loss, "nats",
                         {{"step", std::to_string(s.step)}, {"run", run.label}, {"scope", "this rank"}});
    }
    return completed;
  });
}

}  // namespace

void run_ddp_phase(PhaseContext& ctx, const DdpConfig& config) { DdpPhase(ctx, config).run(); }

}  // namespace gpuaccept::ddp
