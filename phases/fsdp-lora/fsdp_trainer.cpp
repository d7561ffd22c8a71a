#include "fsdp-lora/fsdp_trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <span>
#include <stdexcept>

#include <fmt/format.h>

#include "common/log.h"
#include "common/progress.h"
#include "cuda/cuda_check.h"
#include "cuda/nvtx_range.h"
#include "fsdp-lora/equivalence.h"
#include "hw/nvml_sampler.h"
#include "train/arrival_progress.h"

namespace gpuaccept::fsdp {

namespace {

// The AdamW moments a run of `ranks` ranks needs: with reduce_scatter over several ranks one
// slice of the flat buffer of n (this rank's), else the whole buffer.
std::size_t moments_for(std::size_t n, int ranks, bool scatter) {
  return scatter && ranks > 1 ? lora_slice_stride(n, ranks, kLoraSliceAlign) : n;
}

}  // namespace

FsdpTrainer::FsdpTrainer(gpu::QwenLoraModel& model, gpu::FsdpWeights& weights, const FsdpConfig& config,
                         const train::TokenSource& data, RankRuntime& runtime, std::vector<float> lora_init,
                         int max_micro, std::optional<Nvml::Device> nvml_gpu)
    : model_(model),
      default_weights_(&weights),
      weights_(&weights),
      config_(config),
      data_(data),
      runtime_(runtime),
      init_(std::move(lora_init)),
      max_micro_(std::max(max_micro, config.grad_accum)),
      nvml_gpu_(nvml_gpu),
      // Sized for the all-GPU run from the start: state()'s moment pointers (the checkpoint
      // drill takes them before that run) then stay valid through it.
      optimizer_(moments_for(model.lora_layout().total(), runtime.world().size(),
                             config.grad_reduce == "reduce_scatter")),
      grad_reduce_(plan_lora_buckets(model.lora_layout().layer_starts(),
                                     static_cast<std::size_t>(config.bucket_mib * 1024 * 1024 / sizeof(float))),
                   model.lora_grads(), runtime),
      scatter_(config.grad_reduce == "reduce_scatter"),
      host_losses_(static_cast<std::size_t>(max_micro_) * static_cast<std::size_t>(model.B()) *
                   static_cast<std::size_t>(model.T())),
      staging_(static_cast<std::size_t>(max_micro_) * 2 * static_cast<std::size_t>(model.B()) *
               static_cast<std::size_t>(model.T())) {
  if (init_.size() != model.lora_layout().total())
    throw std::invalid_argument(fmt::format("FsdpTrainer: {} initial LoRA values, the layout has {}", init_.size(),
                                            model.lora_layout().total()));
  for (int m = 0; m < max_micro_; ++m) {
    micro_start_.push_back(std::make_unique<CudaEvent>());
    micro_end_.push_back(std::make_unique<CudaEvent>());
  }
}

std::vector<train::DeviceStateTensor> FsdpTrainer::state() {
  const std::size_t n = model_.lora_layout().total();
  const int W = runtime_.world().size();
  if (scatter_ && W > 1) {
    // Each rank's moments are its slice's only: saved as shards (restored on W ranks only).
    const std::size_t all = optimizer_.size() * static_cast<std::size_t>(W);
    return {{"lora_master", model_.lora_master(), n},
            {"adam_m", optimizer_.m(), all, train::Dtype::f32, /*sharded=*/true},
            {"adam_v", optimizer_.v(), all, train::Dtype::f32, /*sharded=*/true}};
  }
  return {{"lora_master", model_.lora_master(), n}, {"adam_m", optimizer_.m(), n}, {"adam_v", optimizer_.v(), n}};
}

std::size_t FsdpTrainer::moment_elements(int ranks) const {
  return moments_for(model_.lora_layout().total(), ranks, scatter_);
}

void FsdpTrainer::state_restored() {
  model_.refresh_lora_params(stream_);
  GPUACCEPT_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

std::vector<float> FsdpTrainer::lora_master() {
  std::vector<float> host(model_.lora_layout().total());
  GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(host.data(), model_.lora_master(), host.size() * sizeof(float),
                                       cudaMemcpyDeviceToHost, stream_));
  GPUACCEPT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return host;
}

FsdpRun FsdpTrainer::run(const FsdpTrainSpec& spec) {
  if (spec.shards.size() > static_cast<std::size_t>(max_micro_))
    throw std::invalid_argument(fmt::format("FsdpTrainer: run '{}' has {} micro-batches a step, the trainer at most {}",
                                            spec.label, spec.shards.size(), max_micro_));
  // The base this run reads (the model holds only pointers to it).
  weights_ = spec.weights ? spec.weights : default_weights_;
  model_.set_weight_source(weights_);
  model_.set_final_norm(weights_->final_norm());
  snapshot_ = LoraSnapshot{};
  const int run_ranks = spec.comm ? static_cast<int>(spec.comm_ranks.size()) : 1;
  if (!spec.resume) {
    model_.upload_lora(init_, stream_);
    optimizer_.resize(moment_elements(run_ranks), stream_);
    optimizer_.reset(stream_);
  } else if (optimizer_.size() != moment_elements(run_ranks)) {
    throw std::logic_error(fmt::format("FsdpTrainer: run '{}' resumes with {} ranks, its AdamW moments were sized "
                                       "for another number",
                                       spec.label, run_ranks));
  }
  GPUACCEPT_CUDA_CHECK(cudaStreamSynchronize(stream_));

  FsdpRun& run = current_;
  run = FsdpRun{};
  run.label = spec.label;
  run.comm_size = spec.comm ? static_cast<int>(spec.comm_ranks.size()) : 1;
  run.gather_engine = weights_->gather_engine();
  Progress progress(spec.steps - spec.first_step + 1);
  const int micro = spec.shards.empty() ? config_.grad_accum : static_cast<int>(spec.shards.size());
  const double tokens = static_cast<double>(model_.B()) * model_.T() * micro;
  // What the GPU ran at over the steps timed, and only while they ran (ddp/trainer.cpp says why).
  std::optional<NvmlSampler> sampler;
  if (nvml_gpu_) sampler.emplace(*nvml_gpu_, std::chrono::milliseconds(25));
  for (int s = spec.first_step; s <= spec.steps; ++s) {
    if (spec.fault)
      inject_debug_fault(*spec.fault, runtime_.world().rank(), s - 1, fmt::format("fsdp-lora {} step {}", spec.label, s));
    const auto started = std::chrono::steady_clock::now();
    if (sampler && s - spec.first_step >= config_.timing_skip) sampler->on();
    FsdpStepRecord r = step(spec, s);
    if (sampler) sampler->off();
    r.time.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    run.steps.push_back(r);
    // Step 1's gradients: both sides of the equivalence check start from the same weights, so
    // what differs is only how the gradients were computed (sharded and all-reduced, or whole
    // and accumulated). Later steps start from weights that already differ by bf16 noise.
    if (spec.snapshot_step > 0 && s == 1) {
      snapshot_.grads = model_.download_lora_grads(stream_);
      snapshot_.grads_step = s;
    }
    if (s == spec.snapshot_step) {
      snapshot_.lora = lora_master();
      snapshot_.step = s;
    }
    std::size_t free = 0, total = 0;
    GPUACCEPT_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    run.peak_used_bytes = std::max(run.peak_used_bytes, static_cast<double>(total - free));
    if (spec.log_progress)
      progress.step(fmt::format("{}: loss {:.4f}, grad norm {:.3f}, {:.0f} ms, {:.0f} tokens/s per GPU, all-gathers "
                                "{:.1f} ms ({:.1f} ms exposed)",
                                spec.label, r.time.loss, r.time.grad_norm, r.time.step_ms, tokens / (r.time.step_ms / 1e3),
                                r.gather_ms, r.gather_exposed_ms));
    if ((!std::isfinite(r.time.loss) || !std::isfinite(r.time.grad_norm)) && run.first_nonfinite_step == 0) {
      run.first_nonfinite_step = s;
      log_error("{} step {}: loss {}, gradient norm {}", spec.label, s, r.time.loss, r.time.grad_norm);
    }
    // The gradient norm is computed after the all-reduce, the same on every rank: all stop together.
    if (!std::isfinite(r.time.grad_norm)) {
      log_error("{} step {}: the gradient norm is not finite: stopping this run", spec.label, s);
      break;
    }
    if (spec.after_step) spec.after_step(s);
  }
  if (sampler) run.gpu = sampler->summary();
  return run;
}

FsdpStepRecord FsdpTrainer::step(const FsdpTrainSpec& spec, int step_index) {
  NvtxRange range(fmt::format("fsdp-lora step {}", step_index));
  const int accum = config_.grad_accum;
  const std::vector<int> shards =
      spec.shards.empty() ? rank_shards(spec.rank_in_comm, accum) : spec.shards;  // (equivalence.h)
  const int micro = static_cast<int>(shards.size());
  const int ranks = spec.comm ? static_cast<int>(spec.comm_ranks.size()) : 1;
  const std::size_t N = static_cast<std::size_t>(model_.B()) * static_cast<std::size_t>(model_.T());
  const long long progress = train::arrival_progress(spec.label, step_index);
  const WaitContext ctx{fmt::format("fsdp-lora {} step {}", spec.label, step_index), spec.comm_ranks, progress};
  runtime_.arrive(progress);

  // This rank's micro-batches: shards rank x accum .. + accum - 1, distinct across ranks (or the
  // replay's list).
  for (int m = 0; m < micro; ++m) {
    const train::TokenBatch b = data_.sample(shards[static_cast<std::size_t>(m)],
                                             static_cast<std::uint64_t>(step_index), model_.B(), model_.T());
    int* dst = staging_.get() + static_cast<std::size_t>(m) * 2 * N;
    std::copy(b.tokens.begin(), b.tokens.end(), dst);
    std::copy(b.targets.begin(), b.targets.end(), dst + N);
  }
  {
    // Launching may block inside NCCL (a gather to a peer that is gone): under the watchdog.
    auto guard = runtime_.guard(ctx, config_.step_timeout_s);
    step_start_.record(stream_);
    weights_->begin_step();
    model_.zero_lora_grads(stream_);
    const float loss_scale = 1.0f / static_cast<float>(micro * ranks);
    // The last micro-batch's backward launches the gradient buckets as it finishes their layers.
    const bool reduce = spec.comm && ranks > 1;
    if (reduce) grad_reduce_.begin(spec.comm, ranks, scatter_, weights_->comm_stream(), ctx);
    const std::function<void(int)> bucket_cue = [&](int layer) { grad_reduce_.layer_done(layer, stream_); };
    for (int m = 0; m < micro; ++m) {
      const auto i = static_cast<std::size_t>(m);
      micro_start_[i]->record(stream_);
      // Dropout keyed by (seed, micro-step): a fresh mask for every micro-batch of a rank's run;
      // the same on every rank (a replay draws the mask the shard's rank drew).
      const std::uint64_t key_step =
          static_cast<std::uint64_t>(step_index - 1) * static_cast<std::uint64_t>(accum) +
          static_cast<std::uint64_t>(dropout_micro(shards[i], accum));
      const int* tokens = staging_.get() + i * 2 * N;
      const bool last = m == micro - 1;
      model_.enqueue_forward_backward(std::span<const int>(tokens, N), std::span<const int>(tokens + N, N), key_step,
                                      config_.seed, stream_, loss_scale,
                                      reduce && last ? bucket_cue : std::function<void(int)>{});
      GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(host_losses_.get() + i * N, model_.losses(), N * sizeof(float),
                                           cudaMemcpyDeviceToHost, stream_));
      micro_end_[i]->record(stream_);
    }
    backward_done_.record(stream_);
    if (reduce) grad_reduce_.join(stream_);
    // Step 1's gradients whole on every rank: the equivalence check compares them.
    if (reduce && scatter_ && step_index == 1) broadcast_slices(model_.lora_grads(), spec, ctx, "gradients");
    comm_joined_.record(stream_);
    optimizer_step(spec, step_index, ctx);
    optimizer_.fetch_norm(stream_);
    step_end_.record(stream_);
  }
  std::vector<ncclComm_t> comms;
  if (spec.comm) comms.push_back(spec.comm);
  runtime_.wait(step_end_, comms, ctx, config_.step_timeout_s);

  FsdpStepRecord r;
  r.time.step = step_index;
  double sum = 0;
  for (std::size_t i = 0; i < N * static_cast<std::size_t>(micro); ++i) sum += host_losses_.get()[i];
  r.time.loss = sum / static_cast<double>(N * static_cast<std::size_t>(micro));
  r.time.grad_norm = optimizer_.host_norm();
  for (int m = 0; m < micro; ++m) {
    const auto i = static_cast<std::size_t>(m);
    // The head's acquire marks where forward ends (the head's own backward counts as backward).
    const CudaEvent& head = weights_->head_mark(m);
    r.time.forward_ms += head.elapsed_ms_since(*micro_start_[i]);
    r.time.backward_ms += micro_end_[i]->elapsed_ms_since(head);
  }
  r.time.comm_exposed_ms = comm_joined_.elapsed_ms_since(backward_done_);
  r.time.optimizer_ms = step_end_.elapsed_ms_since(comm_joined_);
  r.time.step_ms = step_end_.elapsed_ms_since(step_start_);
  const gpu::GatherStats g = weights_->take_stats();
  r.gather_ms = g.gather_ms;
  r.gather_exposed_ms = g.exposed_ms;
  r.gather_bytes = static_cast<double>(g.bytes);
  r.gathers = g.gathers;
  return r;
}

// Global-norm clipping and AdamW over the flat LoRA buffer (its padding has zero gradients and
// stays zero), all on the device: the clip factor never visits the host.
void FsdpTrainer::optimizer_step(const FsdpTrainSpec& spec, int t, const WaitContext& ctx) {
  NvtxRange range("optimizer");
  const std::size_t n = model_.lora_layout().total();
  const train::AdamW h{static_cast<float>(train::ClippedAdamW::warmed_up(config_.lr, t, config_.lr_warmup) *
                                          config_.learning_fault.lr_scale),
                       static_cast<float>(config_.beta1), static_cast<float>(config_.beta2),
                       static_cast<float>(config_.eps), static_cast<float>(config_.weight_decay), t};
  const int ranks = spec.comm ? static_cast<int>(spec.comm_ranks.size()) : 1;
  if (!scatter_ || ranks == 1) {
    optimizer_.clip(model_.lora_grads(), n, static_cast<float>(config_.grad_clip), stream_);
    // The update writes the bf16 copy the matmuls read too (params = bf16(master)).
    optimizer_.update(model_.lora_master(), model_.lora_params(), model_.lora_grads(), 0, n, h, stream_);
    return;
  }
  // This rank's slice (possibly empty at the end of a small buffer).
  const std::size_t stride = lora_slice_stride(n, ranks, kLoraSliceAlign);
  const std::size_t off = std::min(n, static_cast<std::size_t>(spec.rank_in_comm) * stride);
  const std::size_t count = std::min(stride, n - off);
  optimizer_.sum_squares(model_.lora_grads() + off, count, stream_);
  // The global norm: every rank's sum of squares summed (one float, the same bits everywhere).
  on_comm_stream([&](cudaStream_t comm) {
    runtime_.check(ncclAllReduce(optimizer_.sumsq(), optimizer_.sumsq(), 1, ncclFloat, ncclSum, spec.comm, comm),
                   spec.comm, ctx, "ncclAllReduce of the LoRA gradients' squared norm");
  });
  optimizer_.clip_from_sum(static_cast<float>(config_.grad_clip), stream_);
  optimizer_.update(model_.lora_master() + off, model_.lora_params() + off, model_.lora_grads() + off, 0, count, h,
                    stream_);
  broadcast_slices(model_.lora_master(), spec, ctx, "weights");
  model_.refresh_lora_params(stream_);  // the others' slices: bf16 of the master, as update() writes its own
}

void FsdpTrainer::broadcast_slices(float* buf, const FsdpTrainSpec& spec, const WaitContext& ctx, const char* what) {
  NvtxRange range(fmt::format("LoRA {}: slices broadcast", what));
  const std::size_t n = model_.lora_layout().total();
  const int ranks = static_cast<int>(spec.comm_ranks.size());
  const std::string call = fmt::format("ncclBroadcast of the LoRA {} slices", what);
  on_comm_stream([&](cudaStream_t comm) {
    runtime_.check(ncclGroupStart(), spec.comm, ctx, call.c_str());
    for (const OwnedPart& p : owned_parts(0, n, n, ranks, kLoraSliceAlign))
      runtime_.check(ncclBroadcast(buf + p.offset, buf + p.offset, p.count, ncclFloat, p.rank, spec.comm, comm),
                     spec.comm, ctx, call.c_str());
    runtime_.check(ncclGroupEnd(), spec.comm, ctx, call.c_str());
  });
}

void FsdpTrainer::on_comm_stream(const std::function<void(cudaStream_t)>& enqueue) {
  const cudaStream_t comm = weights_->comm_stream();
  to_comm_.record(stream_);
  GPUACCEPT_CUDA_CHECK(cudaStreamWaitEvent(comm, to_comm_.get(), 0));
  enqueue(comm);
  from_comm_.record(comm);
  GPUACCEPT_CUDA_CHECK(cudaStreamWaitEvent(stream_, from_comm_.get(), 0));
}

}  // namespace gpuaccept::fsdp
