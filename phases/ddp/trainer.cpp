#include "ddp/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "common/log.h"
#include "common/progress.h"
#include "cuda/cuda_check.h"
#include "cuda/nvtx_range.h"
#include "hw/nvml_sampler.h"
#include "train/arrival_progress.h"

namespace gpuaccept::ddp {


namespace {

// Decoupled weight decay on matrices and embeddings, not on biases and LayerNorm
// parameters (GPT-2 / nanoGPT practice): a tensor decays when it has two dimensions
// besides the layer.
bool decays(const ParamTensor& t) { return t.shape.size() - (t.per_layer ? 1 : 0) >= 2; }

}  // namespace

Trainer::Trainer(gpu::GptModel& model, const DdpConfig& config, const train::TokenSource& data,
                 RankRuntime& runtime, std::vector<float> init, int max_micro, std::optional<Nvml::Device> nvml_gpu)
    : model_(model),
      config_(config),
      data_(data),
      runtime_(runtime),
      init_(std::move(init)),
      max_micro_(max_micro),
      nvml_gpu_(nvml_gpu),
      graphs_(model, config.debug_graph_refusal),
      sync_(plan_grad_buckets(model.layout(), model.config().layers,
                              static_cast<std::size_t>(config.bucket_mib * (1 << 20) / sizeof(float))),
            model.grads(), model.num_params(),
            config.grad_reduce == "bf16" ? gpu::ReducePrecision::Bf16 : gpu::ReducePrecision::Fp32,
            model.layout()[Param::wte].size),  // the embedding rows reduced with the last bucket
      optimizer_(model.num_params()),
      staging_(2 * static_cast<std::size_t>(max_micro) * 2 * model.tokens_per_micro_batch()),
      host_losses_(static_cast<std::size_t>(max_micro) * model.tokens_per_micro_batch()) {
  int device = 0;
  GPUACCEPT_CUDA_CHECK(cudaGetDevice(&device));
  GPUACCEPT_CUDA_CHECK(cudaDeviceGetAttribute(&device_sms_, cudaDevAttrMultiProcessorCount, device));
  for (const ParamTensor& tensor : model.layout().tensors()) decay_spans_.add(tensor.offset + tensor.size, decays(tensor));
  for (int i = 0; i < max_micro; ++i) {
    fwd_start_.push_back(std::make_unique<CudaEvent>());
    fwd_end_.push_back(std::make_unique<CudaEvent>());
    bwd_end_.push_back(std::make_unique<CudaEvent>());
  }
}

std::vector<float> Trainer::master_weights() {
  std::vector<float> host(model_.num_params());
  GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(host.data(), model_.master(), host.size() * sizeof(float),
                                       cudaMemcpyDeviceToHost, stream_));
  GPUACCEPT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return host;
}

std::vector<train::DeviceStateTensor> Trainer::state() {
  return {{"master", model_.master(), model_.num_params()},
          {"adam_m", optimizer_.m(), optimizer_.size()},
          {"adam_v", optimizer_.v(), optimizer_.size()}};
}

void Trainer::state_restored() {
  model_.refresh_params(stream_);
  GPUACCEPT_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

TrainRun Trainer::run(const TrainSpec& spec) {
  if (static_cast<int>(spec.shards.size()) > max_micro_ || spec.shards.empty())
    throw std::logic_error(fmt::format("run {}: {} micro-batches, room for {}", spec.label, spec.shards.size(), max_micro_));
  if (!spec.resume) {
    model_.set_master(init_, stream_);
    optimizer_.reset(stream_);
  }
  GPUACCEPT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  // A communicator of one rank has nothing to average: NCCL would still copy every gradient
  // in place (about 1.5 ms of kernels a GPT-2 124M step on an H200, beside the backward pass).
  sync_.set_comm(spec.comm_ranks.size() > 1 ? spec.comm : nullptr);

  TrainRun& run = current_;
  run = TrainRun{};
  run.label = spec.label;
  run.comm_size = spec.comm ? static_cast<int>(spec.comm_ranks.size()) : 1;
  if (sync_.comm()) run.engine = sync_.engine(sync_.comm());
  Progress progress(spec.steps - spec.first_step + 1);
  const double tokens = static_cast<double>(model_.tokens_per_micro_batch()) * spec.shards.size();
  stage(spec, spec.first_step);
  // What the GPU ran at over the steps timed (those after timing_skip), and only while they
  // ran: a checkpoint written between steps leaves the GPU idle, and an idle second lets an
  // H200 at its power cap run the next steps 10% faster (hw/gpu_sample_summary.h).
  std::optional<NvmlSampler> sampler;
  if (nvml_gpu_) sampler.emplace(*nvml_gpu_, std::chrono::milliseconds(25));
  for (int s = spec.first_step; s <= spec.steps; ++s) {
    if (spec.fault)
      inject_debug_fault(*spec.fault, runtime_.world().rank(), s - 1, fmt::format("ddp {} step {}", spec.label, s));
    const auto started = std::chrono::steady_clock::now();
    if (sampler && s - spec.first_step >= config_.timing_skip) sampler->on();
    StepRecord r = step(spec, s);
    if (sampler) sampler->off();
    r.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    run.steps.push_back(r);
    if (spec.log_progress)
      progress.step(fmt::format("{}: loss {:.4f}, grad norm {:.3f}, {:.1f} ms, {:.0f} tokens/s per GPU", spec.label,
                                r.loss, r.grad_norm, r.step_ms, tokens / (r.step_ms / 1e3)));
    if ((!std::isfinite(r.loss) || !std::isfinite(r.grad_norm)) && run.first_nonfinite_step == 0) {
      run.first_nonfinite_step = s;
      log_error("{} step {}: loss {}, gradient norm {}", spec.label, s, r.loss, r.grad_norm);
    }
    // Stop on a non-finite gradient norm only: it is computed after the all-reduce, so every
    // rank of the communicator sees the same value and they all stop at the same step (one
    // rank leaving alone would leave the others waiting in the next all-reduce).
    if (!std::isfinite(r.grad_norm)) {
      log_error("{} step {}: the gradient norm is not finite: stopping this run", spec.label, s);
      break;
    }
    if (spec.after_step) spec.after_step(s);
  }
  sync_.set_comm(nullptr);
  if (sampler) run.gpu = sampler->summary();
  return run;
}

int* Trainer::staged(int step_index) const {
  return staging_.get() + static_cast<std::size_t>(step_index % 2) * staging_.size() / 2;
}

// Step step_index's batches into its half of the pinned staging: the other half may still
// be copied to the GPU for the step in flight; this one's last reader, two steps back, is done.
void Trainer::stage(const TrainSpec& spec, int step_index) {
  const std::size_t N = model_.tokens_per_micro_batch();
  for (std::size_t m = 0; m < spec.shards.size(); ++m) {
    const train::TokenBatch b = data_.sample(spec.shards[m], static_cast<std::uint64_t>(step_index), model_.B(), model_.T());
    int* dst = staged(step_index) + m * 2 * N;
    std::memcpy(dst, b.tokens.data(), N * sizeof(int));
    std::memcpy(dst + N, b.targets.data(), N * sizeof(int));
  }
}

StepRecord Trainer::step(const TrainSpec& spec, int step_index) {
  const int micro = static_cast<int>(spec.shards.size());
  const std::size_t N = model_.tokens_per_micro_batch();
  const float dloss = 1.0f / static_cast<float>(N * static_cast<std::size_t>(micro));
  const long long progress = train::arrival_progress(spec.label, step_index);
  const WaitContext ctx{fmt::format("ddp {} step {}", spec.label, step_index), spec.comm_ranks, progress};
  const NvtxRange range(ctx.what);  // the step on an Nsight Systems timeline, named as its waits are
  runtime_.arrive(progress);

  // This step's tokens (staged during the previous step) marked for the embedding's rows.
  gpu::EmbeddingRows& rows = model_.embedding_rows();
  rows.clear_marks();
  for (int m = 0; m < micro; ++m)
    rows.mark(std::span<const int>(staged(step_index) + static_cast<std::size_t>(m) * 2 * N, N));

  // ddp.cuda_graph, in a job of one GPU: with no communicator the backward's hooks do
  // nothing, so each pass can be one graph (gpu/model_graphs.h), from the run's second step
  // on: its first times the matmuls' candidates, with host waits a capture cannot hold. In a
  // job of several GPUs every run stays eager, the runs alone too, so that the scaling
  // figure compares like with like.
  const bool graphed = config_.cuda_graph && runtime_.world().size() == 1 && !sync_.comm() &&
                       step_index > spec.first_step;
  const int captured = graphs_.captured();
  const bool failed = !graphs_.failure().empty();
  {
    // Launching may block inside NCCL (connecting to a peer that is gone): under the watchdog.
    auto guard = runtime_.guard(ctx, config_.step_timeout_s);
    step_start_.record(stream_);
    rows.plan(sync_.comm(), stream_);
    // Its all-reduce of the marks and the buckets' share a communicator: never at once.
    rows.wait(sync_.stream());
    for (int m = 0; m < micro; ++m) {
      const int* src = staged(step_index) + static_cast<std::size_t>(m) * 2 * N;
      GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(model_.tokens(), src, N * sizeof(int), cudaMemcpyHostToDevice, stream_));
      GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(model_.targets(), src + N, N * sizeof(int), cudaMemcpyHostToDevice, stream_));
      fwd_start_[static_cast<std::size_t>(m)]->record(stream_);
      if (graphed)
        graphs_.forward(dloss, stream_);
      else
        model_.forward(dloss, stream_);
      GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(host_losses_.get() + static_cast<std::size_t>(m) * N, model_.losses(),
                                           N * sizeof(float), cudaMemcpyDeviceToHost, stream_));
      fwd_end_[static_cast<std::size_t>(m)]->record(stream_);
      // Only the last micro-batch's backward completes the gradients: reduce then (DDP's no_sync).
      const bool last = m == micro - 1;
      // The first micro-batch's backward overwrites the gradients: nothing to zero here.
      const auto grads = m == 0 ? gpu::GptModel::Grads::Overwrite : gpu::GptModel::Grads::Accumulate;
      rows.wait(stream_);
      auto hooks = [&](int layer) {
        if (!last) return;
        if (layer == kEmbeddingsStage && sync_.comm()) {
          // The rows' count reaches the host with plan()'s work, normally long done; waited
          // for like every wait here, so a peer that never joined the marks' all-reduce
          // ends the step through the runtime instead of hanging it.
          runtime_.wait(rows.counted(), {spec.comm}, ctx, config_.step_timeout_s);
          sync_.layer_done(layer, stream_, std::span(rows.rows(), rows.reduced_elements()));
        } else {
          sync_.layer_done(layer, stream_);
        }
        // From the first bucket on, NCCL holds up to comm_sms SMs: the matmuls enqueued
        // meanwhile are planned for the others (src/train/matmul.h says why), never fewer than half.
        if (sync_.reducing() && config_.comm_sms > 0)
          model_.set_matmul_sm_target(std::max(device_sms_ / 2, device_sms_ - config_.comm_sms));
      };
      if (graphed)
        graphs_.backward(grads, stream_);  // no communicator: the hooks would do nothing
      else
        model_.backward(stream_, grads, hooks);
      model_.set_matmul_sm_target(0);
      bwd_end_[static_cast<std::size_t>(m)]->record(stream_);
    }
    sync_.join(stream_);
    comm_joined_.record(stream_);
    rows.add_into(model_.grads() + model_.layout()[Param::wte].offset, stream_);
    optimizer_step(step_index);
    optimizer_.fetch_norm(stream_);
    step_end_.record(stream_);
  }
  if (graphs_.captured() > captured && spec.log_progress)
    log_rank0("ddp: {} step {}: {} pass(es) captured as CUDA graphs, replayed from now on (ddp.cuda_graph); "
              "in all, {} memset nodes run as kernels ({} bytes, the largest {})",
              spec.label, step_index, graphs_.captured() - captured, graphs_.memsets().replaced,
              graphs_.memsets().bytes, graphs_.memsets().largest);
  if (!failed && !graphs_.failure().empty())
    log_rank0("ddp: {} step {}: a pass could not be captured as a CUDA graph, so every pass runs kernel by kernel "
              "from now on, as with ddp.cuda_graph false: {}", spec.label, step_index, graphs_.failure());
  // The next step's batches, sampled while the GPU runs this one.
  if (step_index < spec.steps) stage(spec, step_index + 1);
  std::vector<ncclComm_t> comms;
  if (spec.comm) comms.push_back(spec.comm);
  runtime_.wait(step_end_, comms, ctx, config_.step_timeout_s);

  StepRecord r;
  r.step = step_index;
  double sum = 0;
  for (std::size_t i = 0; i < N * static_cast<std::size_t>(micro); ++i) sum += host_losses_.get()[i];
  r.loss = sum / static_cast<double>(N * static_cast<std::size_t>(micro));
  r.grad_norm = optimizer_.host_norm();
  for (int m = 0; m < micro; ++m) {
    const auto i = static_cast<std::size_t>(m);
    r.forward_ms += fwd_end_[i]->elapsed_ms_since(*fwd_start_[i]);
    r.backward_ms += bwd_end_[i]->elapsed_ms_since(*fwd_end_[i]);
  }
  r.comm_exposed_ms = comm_joined_.elapsed_ms_since(*bwd_end_[static_cast<std::size_t>(micro - 1)]);
  r.optimizer_ms = step_end_.elapsed_ms_since(comm_joined_);
  r.step_ms = step_end_.elapsed_ms_since(step_start_);
  return r;
}

// Global-norm clipping and AdamW, all on the device: the clip factor never visits the host.
// AdamW is one launch over the flat buffer, the tensors' weight decay told apart by spans
// (16 tensors, 10 spans: a launch per tensor cost the small ones' launches and every tail).
void Trainer::optimizer_step(int t) {
  const NvtxRange range("optimizer");
  const std::size_t n = model_.num_params();
  optimizer_.clip(model_.grads(), n, static_cast<float>(config_.grad_clip), stream_);
  const double lr =
      train::ClippedAdamW::warmed_up(config_.lr, t, config_.lr_warmup) * config_.learning_fault.lr_scale;
  const train::AdamW h{static_cast<float>(lr), static_cast<float>(config_.beta1), static_cast<float>(config_.beta2),
                       static_cast<float>(config_.eps), static_cast<float>(config_.weight_decay), t};
  optimizer_.update_all(model_.master(), model_.params(), model_.grads(), h, decay_spans_, stream_);
}

}  // namespace gpuaccept::ddp
