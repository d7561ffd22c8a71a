#include "fsdp-lora/gpu/qwen_model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "cuda/cuda_check.h"
#include "cuda/nvtx_range.h"
#include "train/bf16_cast_kernels.h"

namespace gpuaccept::fsdp::gpu {

namespace {

std::size_t sz(long long v) { return static_cast<std::size_t>(v); }
std::size_t index_of(Projection p) { return static_cast<std::size_t>(p); }

const QwenConfig& checked(const QwenConfig& c, const LoraConfig& lora, int B, int T, const ModelOptions& o) {
  validate(c);
  if (B < 1 || T < 1) throw std::invalid_argument(fmt::format("QwenLoraModel: B={} and T={} must be positive", B, T));
  if (lora.rank < 1) throw std::invalid_argument(fmt::format("QwenLoraModel: LoRA rank {} must be positive", lora.rank));
  if (!(lora.dropout >= 0 && lora.dropout < 1))
    throw std::invalid_argument(fmt::format("QwenLoraModel: LoRA dropout {} must lie in [0, 1)", lora.dropout));
  if (o.logits_chunk < 1)
    throw std::invalid_argument(fmt::format("QwenLoraModel: logits_chunk {} must be positive", o.logits_chunk));
  return c;
}

}  // namespace

// ---------------------------------------------------------------- frozen weights

LayerWeights LayerWeights::from_flat(const LayerLayout& layout, const bf16* flat) {
  auto at = [&](const char* suffix) { return flat + layout.find(suffix).offset; };
  return {at("input_layernorm.weight"),
          at("self_attn.q_proj.weight"),
          at("self_attn.q_proj.bias"),
          at("self_attn.k_proj.weight"),
          at("self_attn.k_proj.bias"),
          at("self_attn.v_proj.weight"),
          at("self_attn.v_proj.bias"),
          at("self_attn.o_proj.weight"),
          at("post_attention_layernorm.weight"),
          at("mlp.gate_proj.weight"),
          at("mlp.up_proj.weight"),
          at("mlp.down_proj.weight")};
}

FrozenLinear LayerWeights::projection(const QwenConfig& c, Projection p) const {
  const int in = projection_in(c, p), out = projection_out(c, p);
  switch (p) {
    case Projection::q: return {wq, bq, in, out};
    case Projection::k: return {wk, bk, in, out};
    case Projection::v: return {wv, bv, in, out};
    case Projection::o: return {wo, nullptr, in, out};
    case Projection::gate: return {wg, nullptr, in, out};
    case Projection::up: return {wu, nullptr, in, out};
    case Projection::down: return {wd, nullptr, in, out};
  }
  throw std::invalid_argument("LayerWeights::projection: not a Projection");
}

// The pointers set by set_layer_weights / set_embedding / set_head, as a WeightSource.
class QwenLoraModel::ResidentWeights final : public WeightSource {
 public:
  explicit ResidentWeights(int layers) : layers_(static_cast<std::size_t>(layers), nullptr) {}
  const bf16* acquire(WeightKind kind, int layer, cudaStream_t) override {
    const bf16* p = kind == WeightKind::embedding ? embedding_
                    : kind == WeightKind::head    ? head_
                                                  : layers_.at(static_cast<std::size_t>(layer));
    if (!p)
      throw std::logic_error(kind == WeightKind::layer ? fmt::format("QwenLoraModel: layer {}'s weights were not set", layer)
                                                       : std::string("QwenLoraModel: the embedding or head was not set"));
    return p;
  }
  std::vector<const bf16*> layers_;
  const bf16* embedding_ = nullptr;
  const bf16* head_ = nullptr;
};

// ---------------------------------------------------------------- construction

QwenLoraModel::QwenLoraModel(const QwenConfig& config, const LoraConfig& lora, int B, int T, ModelOptions options)
    : config_(checked(config, lora, B, T, options)),
      lora_(lora),
      B_(B),
      T_(T),
      N_(B * T),
      options_(options),
      layer_layout_(make_layer_layout(config)),
      lora_layout_(config, lora),
      gemm_(options.naive_gemm, options.matmul_autotune),
      attention_(make_attention(B, T, config.heads, config.kv_heads, config.head_dim,
                                keeps_attention() ? config.layers : 1)),
      lora_linear_(std::make_unique<LoraLinear>(gemm_, B * T, lora.rank, lora.scale(), lora_dropout_scratch_columns(config, lora))),
      resident_(std::make_unique<ResidentWeights>(config.layers)),
      source_(resident_.get()) {
  const long long N = N_, C = config_.hidden, L = config_.layers, I = config_.intermediate, V = config_.vocab;
  const long long Q = 1LL * config_.heads * config_.head_dim, KV = 1LL * config_.kv_heads * config_.head_dim;
  const long long R = std::min<long long>(options_.logits_chunk, N);

  master_ = DeviceBuffer<float>(lora_layout_.total());
  grads_ = DeviceBuffer<float>(lora_layout_.total());
  params_ = DeviceBuffer<bf16>(lora_layout_.total());
  tokens_ = DeviceBuffer<int>(sz(N));
  targets_ = DeviceBuffer<int>(sz(N));
  losses_host_ = PinnedBuffer<float>(sz(N));

  residual_ = DeviceBuffer<bf16>(sz((L + 1) * N * C));

  // Activation sets: S = 1 with recompute, L without (memory_plan.cpp's list of what backward reads).
  const long long S = options_.recompute ? 1 : L;
  auto has_target = [&](Projection p) { return std::find(lora.targets.begin(), lora.targets.end(), p) != lora.targets.end(); };
  x1_per_slot_ = has_target(Projection::q) || has_target(Projection::k) || has_target(Projection::v);
  x2_per_slot_ = has_target(Projection::gate) || has_target(Projection::up);
  a_per_slot_ = has_target(Projection::down);
  x1_ = DeviceBuffer<bf16>(sz((x1_per_slot_ ? S : 1) * N * C));
  rstd1_ = DeviceBuffer<float>(sz(S * N));
  const long long block_sets = keeps_attention_block() ? L : 1;
  q_ = DeviceBuffer<bf16>(sz(block_sets * N * Q));
  k_ = DeviceBuffer<bf16>(sz(block_sets * N * KV));
  v_ = DeviceBuffer<bf16>(sz(block_sets * N * KV));
  y_ = DeviceBuffer<bf16>(sz((keeps_attention() ? L : 1) * N * Q));
  h_mid_ = DeviceBuffer<bf16>(sz(block_sets * N * C));
  x2_ = DeviceBuffer<bf16>(sz((x2_per_slot_ ? S : 1) * N * C));
  rstd2_ = DeviceBuffer<float>(sz(S * N));
  gate_ = DeviceBuffer<bf16>(sz(S * N * I));
  up_ = DeviceBuffer<bf16>(sz(S * N * I));
  a_ = DeviceBuffer<bf16>(sz((a_per_slot_ ? S : 1) * N * I));
  // One (N, r) slot per projection, each starting 16-byte aligned (N * r may be odd).
  z_ = DeviceBuffer<bf16>(sz(S) * std::size(kAllProjections) * ((sz(N) * sz(lora.rank) + 7) / 8 * 8));

  dres_ = DeviceBuffer<float>(sz(N * C));
  dres_bf16_ = DeviceBuffer<bf16>(sz(N * C));
  dxn_ = DeviceBuffer<float>(sz(N * C));
  dy_ = DeviceBuffer<bf16>(sz(N * Q));
  dq_ = DeviceBuffer<bf16>(sz(N * Q));
  dk_ = DeviceBuffer<bf16>(sz(N * KV));
  dv_ = DeviceBuffer<bf16>(sz(N * KV));
  dgate_ = DeviceBuffer<bf16>(sz(N * I));
  dup_ = DeviceBuffer<bf16>(sz(N * I));
  xf_ = DeviceBuffer<bf16>(sz(N * C));
  rstdf_ = DeviceBuffer<float>(sz(N));
  logits_ = DeviceBuffer<float>(sz(R * V));
  dlogits_ = DeviceBuffer<bf16>(sz(R * V));
  losses_ = DeviceBuffer<float>(sz(N));

  // The flat LoRA buffers' padding must read 0 (it is all-reduced and stepped with the rest).
  GPUACCEPT_CUDA_CHECK(cudaMemset(master_.get(), 0, master_.bytes()));
  GPUACCEPT_CUDA_CHECK(cudaMemset(grads_.get(), 0, grads_.bytes()));
  GPUACCEPT_CUDA_CHECK(cudaMemset(params_.get(), 0, params_.bytes()));
}

QwenLoraModel::~QwenLoraModel() = default;

std::size_t QwenLoraModel::device_bytes() const {
  std::size_t total = master_.bytes() + grads_.bytes() + params_.bytes() + tokens_.bytes() + targets_.bytes() +
                      attention_->device_bytes() + lora_linear_->device_bytes();
  for (const auto* b : {&residual_, &x1_, &q_, &k_, &v_, &y_, &h_mid_, &x2_, &gate_, &up_, &a_, &z_, &dres_bf16_, &dy_,
                        &dq_, &dk_, &dv_, &dgate_, &dup_, &xf_, &dlogits_})
    total += b->bytes();
  for (const auto* b : {&rstd1_, &rstd2_, &dres_, &dxn_, &rstdf_, &logits_, &losses_}) total += b->bytes();
  return total;
}

// ---------------------------------------------------------------- weights and LoRA parameters

void QwenLoraModel::set_layer_weights(int layer, const bf16* flat_layer) {
  if (layer < 0 || layer >= config_.layers)
    throw std::invalid_argument(fmt::format("set_layer_weights: layer {} outside 0..{}", layer, config_.layers - 1));
  resident_->layers_[static_cast<std::size_t>(layer)] = flat_layer;
}
void QwenLoraModel::set_embedding(const bf16* embed) { resident_->embedding_ = embed; }
void QwenLoraModel::set_head(const bf16* head) { resident_->head_ = head; }
void QwenLoraModel::set_final_norm(const bf16* w_final) { final_norm_ = w_final; }
void QwenLoraModel::set_weight_source(WeightSource* source) { source_ = source ? source : resident_.get(); }

void QwenLoraModel::upload_lora(std::span<const float> flat, cudaStream_t stream) {
  if (flat.size() != lora_layout_.total())
    throw std::invalid_argument(
        fmt::format("upload_lora: {} values, the LoRA layout has {}", flat.size(), lora_layout_.total()));
  GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(master_.get(), flat.data(), master_.bytes(), cudaMemcpyHostToDevice, stream));
  refresh_lora_params(stream);  // (a copy from pageable memory has read it before returning)
}

void QwenLoraModel::refresh_lora_params(cudaStream_t stream) {
  train::cast_to_bf16(params_.get(), master_.get(), lora_layout_.total(), stream);
}

void QwenLoraModel::zero_lora_grads(cudaStream_t stream) {
  GPUACCEPT_CUDA_CHECK(cudaMemsetAsync(grads_.get(), 0, grads_.bytes(), stream));
}

std::vector<float> QwenLoraModel::download_lora_grads(cudaStream_t stream) const {
  std::vector<float> host(lora_layout_.total());
  GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(host.data(), grads_.get(), grads_.bytes(), cudaMemcpyDeviceToHost, stream));
  GPUACCEPT_CUDA_CHECK(cudaStreamSynchronize(stream));
  return host;
}

QwenLoraModel::LayerActivations QwenLoraModel::activations(int l) const {
  const std::size_t at = sz(slot(l)), N = sz(N_), C = sz(config_.hidden), I = sz(config_.intermediate);
  const std::size_t Q = sz(1LL * config_.heads * config_.head_dim), KV = sz(1LL * config_.kv_heads * config_.head_dim);
  const std::size_t z_set = std::size(kAllProjections) * ((N * sz(lora_.rank) + 7) / 8 * 8);
  return {x1_.get() + (x1_per_slot_ ? at : 0) * N * C,
          rstd1_.get() + at * N,
          q_.get() + sz(attention_block_slot(l)) * N * Q,
          k_.get() + sz(attention_block_slot(l)) * N * KV,
          v_.get() + sz(attention_block_slot(l)) * N * KV,
          y_.get() + sz(attention_slot(l)) * N * Q,
          h_mid_.get() + sz(attention_block_slot(l)) * N * C,
          x2_.get() + (x2_per_slot_ ? at : 0) * N * C,
          rstd2_.get() + at * N,
          gate_.get() + at * N * I,
          up_.get() + at * N * I,
          a_.get() + (a_per_slot_ ? at : 0) * N * I,
          z_.get() + at * z_set};
}

const Adapter* QwenLoraModel::adapter(int l, Projection p, Pass pass, const DropoutKey& key) {
  const LoraSlot* slot = lora_layout_.find(l, p);
  if (!slot) return nullptr;
  const std::size_t z_slot = (sz(N_) * sz(lora_.rank) + 7) / 8 * 8;
  Adapter& ad = adapters_[index_of(p)];
  ad.A = params_.get() + slot->a_offset;
  ad.B = params_.get() + slot->b_offset;
  ad.dA = grads_.get() + slot->a_offset;
  ad.dB = grads_.get() + slot->b_offset;
  ad.z = activations(l).z + index_of(p) * z_slot;
  ad.key = {key.seed, key.step, static_cast<std::uint32_t>(l), static_cast<std::uint32_t>(index_of(p))};
  ad.dropout = pass == Pass::eval ? 0.0 : lora_.dropout;
  return &ad;
}

const bf16* QwenLoraModel::residual(int l) const { return residual_.get() + sz(l) * sz(N_) * sz(config_.hidden); }

// ---------------------------------------------------------------- inputs

void QwenLoraModel::upload_tokens(std::span<const int> tokens, std::span<const int> targets, cudaStream_t stream) {
  if (tokens.size() != sz(N_) || targets.size() != sz(N_))
    throw std::invalid_argument(fmt::format("QwenLoraModel: tokens and targets must hold B*T = {} ids (they hold {} and {})",
                                            N_, tokens.size(), targets.size()));
  for (std::span<const int> ids : {tokens, targets})
    for (int id : ids)
      if (id < 0 || id >= config_.vocab)
        throw std::invalid_argument(fmt::format("QwenLoraModel: token id {} outside [0, {})", id, config_.vocab));
  GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(tokens_.get(), tokens.data(), tokens_.bytes(), cudaMemcpyHostToDevice, stream));
  GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(targets_.get(), targets.data(), targets_.bytes(), cudaMemcpyHostToDevice, stream));
}

// h_0 (B, T, C) = embed[tokens]
void QwenLoraModel::embed(cudaStream_t s) {
  const bf16* embed = source_->acquire(WeightKind::embedding, 0, s);
  embedding_forward(residual_.get(), tokens_.get(), embed, N_, config_.hidden, s);
  source_->release(WeightKind::embedding, 0, s);
}

// ---------------------------------------------------------------- one decoder layer, forward
//   x1 = rmsnorm(h) w_in;  q, k, v = x1 W^T + b (+ LoRA);  RoPE on q, k;  y = attention(q, k, v)
//   h_mid = h + y Wo^T (+ LoRA);  x2 = rmsnorm(h_mid) w_post;  gate, up = x2 W^T (+ LoRA)
//   a = silu(gate) up;  h_out = h_mid + a Wd^T (+ LoRA)

void QwenLoraModel::layer_forward(int l, const LayerWeights& w, Pass pass, const DropoutKey& key, const bf16* h_in,
                                  bf16* h_out, cudaStream_t s) {
  const int N = N_, T = T_, C = config_.hidden, I = config_.intermediate, NH = config_.heads, NKV = config_.kv_heads,
            HD = config_.head_dim;
  const float eps = static_cast<float>(config_.rms_eps);
  auto proj = [&](Projection p) { return w.projection(config_, p); };
  auto ad = [&](Projection p) { return adapter(l, p, pass, key); };
  LoraLinear& lin = *lora_linear_;
  const LayerActivations act = activations(l);

  // Attention block
  rmsnorm_forward(act.x1, act.rstd1, h_in, w.w_in, N, C, eps, s);
  const GroupMember qkv[] = {{proj(Projection::q), ad(Projection::q), act.q, nullptr},
                             {proj(Projection::k), ad(Projection::k), act.k, nullptr},
                             {proj(Projection::v), ad(Projection::v), act.v, nullptr}};
  if (pass == Pass::recompute && keeps_attention_block()) {
    // q, k, v, y and h_mid are the forward's: only what backward reads and did not keep, the
    // first norm above (its 1/rms, and the q/k/v adapters' input) and the adapters' z.
    lin.forward_group(qkv, act.x1, s, /*adapter_only=*/true);
    if (const Adapter* a = ad(Projection::o)) lin.forward(nullptr, act.y, proj(Projection::o), a, s, nullptr, true);
  } else {
    lin.forward_group(qkv, act.x1, s);
    rope_forward(act.q, N, T, NH, HD, NH * HD, config_.rope_theta, s);
    rope_forward(act.k, N, T, NKV, HD, NKV * HD, config_.rope_theta, s);
    // The recompute reads the forward's y and attention state where they were kept.
    if (pass != Pass::recompute || !keeps_attention())
      attention_->forward(attention_slot(l), act.y, act.q, act.k, act.v, gemm_, s);
    lin.forward(act.h_mid, act.y, proj(Projection::o), ad(Projection::o), s, /*residual=*/h_in);
  }

  // MLP block
  rmsnorm_forward(act.x2, act.rstd2, act.h_mid, w.w_post, N, C, eps, s);
  const GroupMember gate_up[] = {{proj(Projection::gate), ad(Projection::gate), act.gate, nullptr},
                                 {proj(Projection::up), ad(Projection::up), act.up, nullptr}};
  lin.forward_group(gate_up, act.x2, s);
  const Adapter* down = ad(Projection::down);
  // The recompute needs neither h_out (the next layer's saved input) nor, without an adapter
  // on down, a (swiglu's backward reads gate and up): it stops at down's adapter product.
  if (pass == Pass::recompute && !down) return;
  swiglu_forward(act.a, I, act.gate, act.up, I, N, I, s);
  lin.forward(h_out, act.a, proj(Projection::down), down, s, /*residual=*/act.h_mid,
              /*adapter_only=*/pass == Pass::recompute);
}

// ---------------------------------------------------------------- one decoder layer, backward
// The forward's steps in reverse. dres_ (fp32) carries d(loss)/d(h) down the residual stream:
// each block's branch adds its part through its RMSNorm's backward; dxn_ (fp32) sums the
// gradients of a normed input from the projections that read it.

void QwenLoraModel::layer_backward(int l, const LayerWeights& w, const DropoutKey& key, const bf16* h_in,
                                   cudaStream_t s) {
  const int N = N_, T = T_, C = config_.hidden, I = config_.intermediate, NH = config_.heads, NKV = config_.kv_heads,
            HD = config_.head_dim;
  auto proj = [&](Projection p) { return w.projection(config_, p); };
  auto ad = [&](Projection p) { return adapter(l, p, Pass::recompute, key); };
  LoraLinear& lin = *lora_linear_;

  const LayerActivations act = activations(l);

  // MLP block. dres_ = d(h_out), which is also d(mlp) (the residual add passes it through);
  // dres_bf16_ its bf16 copy, written with it (by the head's or the layer above's RMSNorm backward).
  // da (N, I) = d(mlp) Wd (+ LoRA), into dgate_
  lin.backward({dgate_.get(), false, false}, dres_bf16_.get(), act.a, proj(Projection::down), ad(Projection::down), s);
  // dgate, dup (N, I) from da, in place over da
  swiglu_backward(dgate_.get(), dup_.get(), I, dgate_.get(), I, act.gate, act.up, I, N, I, s);
  // dx2 (N, C) fp32 = dgate Wg + dup Wu (+ LoRA)
  const GroupMember gate_up[] = {{proj(Projection::gate), ad(Projection::gate), nullptr, dgate_.get()},
                                 {proj(Projection::up), ad(Projection::up), nullptr, dup_.get()}};
  lin.backward_group({dxn_.get(), true, false}, gate_up, act.x2, s);
  // d(h_mid) = d(h_out) + rmsnorm2's backward of dx2
  rmsnorm_backward_fp32(dres_.get(), dxn_.get(), act.h_mid, w.w_post, act.rstd2, N, C, true, s, dres_bf16_.get());

  // Attention block. dres_ = d(h_mid) = d(o), dres_bf16_ its copy.
  // dy (N, Q) = d(o) Wo (+ LoRA)
  lin.backward({dy_.get(), false, false}, dres_bf16_.get(), act.y, proj(Projection::o), ad(Projection::o), s);
  attention_->backward(attention_slot(l), dq_.get(), dk_.get(), dv_.get(), dy_.get(), gemm_, s);
  // Through RoPE: the inverse rotation, giving the gradients of the projections' outputs
  rope_backward(dq_.get(), N, T, NH, HD, NH * HD, config_.rope_theta, s);
  rope_backward(dk_.get(), N, T, NKV, HD, NKV * HD, config_.rope_theta, s);
  // dx1 (N, C) fp32 = dq Wq + dk Wk + dv Wv (+ LoRA)
  const GroupMember qkv[] = {{proj(Projection::q), ad(Projection::q), nullptr, dq_.get()},
                             {proj(Projection::k), ad(Projection::k), nullptr, dk_.get()},
                             {proj(Projection::v), ad(Projection::v), nullptr, dv_.get()}};
  lin.backward_group({dxn_.get(), true, false}, qkv, act.x1, s);
  // d(h_in) = d(h_mid) + rmsnorm1's backward of dx1
  rmsnorm_backward_fp32(dres_.get(), dxn_.get(), h_in, w.w_in, act.rstd1, N, C, true, s, dres_bf16_.get());
}

// ---------------------------------------------------------------- head and loss
//   xf = rmsnorm(h_L) w_final;  logits = xf Whead^T;  loss = mean cross-entropy
// by chunks of rows, so that only (chunk, V) logits exist at once: each chunk's fp32 logits,
// its losses and (backward) its bf16 d(logits) and d(xf) rows = d(logits) Whead, before the next.

void QwenLoraModel::head(bool backward, float dloss, cudaStream_t s) {
  const int N = N_, C = config_.hidden, V = config_.vocab, L = config_.layers;
  const bf16* h_last = residual(L);
  rmsnorm_forward(xf_.get(), rstdf_.get(), h_last, final_norm_, N, C, static_cast<float>(config_.rms_eps), s);
  const bf16* w_head = source_->acquire(WeightKind::head, 0, s);
  float* dxf = dxn_.get();  // (N, C) fp32: free until the last layer's backward
  for (int r0 = 0; r0 < N; r0 += options_.logits_chunk) {
    const int rows = std::min(options_.logits_chunk, N - r0);
    // logits (rows, V) fp32 = xf[r0 ..] (rows, C) Whead^T, Whead stored (V, C)
    gemm_.run({.M = rows, .N = V, .K = C,
               .a = xf_.get() + sz(r0) * sz(C), .lda = C,
               .b = w_head, .ldb = C, .tb = true,
               .d = logits_.get(), .ldd = V, .fp32_out = true},
              s);
    cross_entropy_fp32(losses_.get() + r0, backward ? dlogits_.get() : nullptr, logits_.get(), targets_.get() + r0,
                       rows, V, dloss, s);
    if (!backward) continue;
    // dxf[r0 ..] (rows, C) fp32 = dlogits (rows, V) Whead (V, C)
    gemm_.run({.M = rows, .N = C, .K = V,
               .a = dlogits_.get(), .lda = V,
               .b = w_head, .ldb = C,
               .d = dxf + sz(r0) * sz(C), .ldd = C, .fp32_out = true},
              s);
  }
  source_->release(WeightKind::head, 0, s);
  // d(h_L) = rmsnorm_f's backward of dxf: the start of the residual stream's gradient
  if (backward)
    rmsnorm_backward_fp32(dres_.get(), dxf, h_last, final_norm_, rstdf_.get(), N, C, false, s, dres_bf16_.get());
}

float QwenLoraModel::mean_loss(cudaStream_t s) {
  GPUACCEPT_CUDA_CHECK(
      cudaMemcpyAsync(losses_host_.get(), losses_.get(), losses_.bytes(), cudaMemcpyDeviceToHost, s));
  GPUACCEPT_CUDA_CHECK(cudaStreamSynchronize(s));
  double sum = 0;
  for (std::size_t i = 0; i < losses_host_.size(); ++i) sum += losses_host_.get()[i];
  return static_cast<float>(sum / static_cast<double>(N_));
}

// ---------------------------------------------------------------- the passes

float QwenLoraModel::forward_backward(std::span<const int> tokens, std::span<const int> targets, std::uint64_t step,
                                      std::uint64_t seed, cudaStream_t s, float loss_scale) {
  enqueue_forward_backward(tokens, targets, step, seed, s, loss_scale);
  return mean_loss(s);
}

void QwenLoraModel::enqueue_forward_backward(std::span<const int> tokens, std::span<const int> targets,
                                             std::uint64_t step, std::uint64_t seed, cudaStream_t s, float loss_scale,
                                             const std::function<void(int layer)>& layer_done) {
  if (!final_norm_) throw std::logic_error("QwenLoraModel: the final norm was not set");
  const int L = config_.layers;
  const DropoutKey key{seed, step, 0, 0};  // layer and target filled in per adapter
  upload_tokens(tokens, targets, s);

  // Forward: keep each layer's input only.
  embed(s);
  for (int l = 0; l < L; ++l) {
    NvtxRange range(fmt::format("layer {} forward", l));
    const LayerWeights w = LayerWeights::from_flat(layer_layout_, source_->acquire(WeightKind::layer, l, s));
    layer_forward(l, w, Pass::train, key, residual(l), residual_.get() + sz(l + 1) * sz(N_) * sz(config_.hidden), s);
    source_->release(WeightKind::layer, l, s);
  }
  {
    NvtxRange range("head");
    head(true, loss_scale / static_cast<float>(N_), s);
  }
  // Backward: per layer (with recompute: first rebuild its activations from its saved input),
  // then back through it.
  for (int l = L - 1; l >= 0; --l) {
    NvtxRange range(fmt::format("layer {} {}", l, options_.recompute ? "recompute+backward" : "backward"));
    const LayerWeights w = LayerWeights::from_flat(layer_layout_, source_->acquire(WeightKind::layer, l, s));
    if (options_.recompute) layer_forward(l, w, Pass::recompute, key, residual(l), nullptr, s);
    layer_backward(l, w, key, residual(l), s);
    source_->release(WeightKind::layer, l, s);
    if (layer_done) layer_done(l);
  }
}

float QwenLoraModel::forward_only(std::span<const int> tokens, std::span<const int> targets, cudaStream_t s) {
  if (!final_norm_) throw std::logic_error("QwenLoraModel: the final norm was not set");
  const int L = config_.layers;
  upload_tokens(tokens, targets, s);
  embed(s);
  for (int l = 0; l < L; ++l) {
    NvtxRange range(fmt::format("layer {} forward (eval)", l));
    const LayerWeights w = LayerWeights::from_flat(layer_layout_, source_->acquire(WeightKind::layer, l, s));
    layer_forward(l, w, Pass::eval, DropoutKey{}, residual(l),
                  residual_.get() + sz(l + 1) * sz(N_) * sz(config_.hidden), s);
    source_->release(WeightKind::layer, l, s);
  }
  head(false, 0.0f, s);
  return mean_loss(s);
}

}  // namespace gpuaccept::fsdp::gpu
