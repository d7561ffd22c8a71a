#include "ddp/gpu/gpt_model.h"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "cuda/cuda_check.h"
#include "cuda/nvtx_range.h"
#include "train/bf16_cast_kernels.h"
#include "train/causal_softmax_kernels.h"

namespace gpuaccept::ddp::gpu {

int padded_vocab(int vocab) { return (vocab + 127) / 128 * 128; }

GptConfig padded(const GptConfig& config) {
  GptConfig c = config;
  c.vocab = padded_vocab(config.vocab);
  return c;
}

std::vector<float> to_padded_master(const GptConfig& config, std::span<const double> params) {
  const ParamLayout cpu(config), gpu(padded(config));
  if (params.size() != cpu.total())
    throw std::invalid_argument(fmt::format("{} weights for a model of {}", params.size(), cpu.total()));
  std::vector<float> out(gpu.total(), 0.0f);
  // Tensor by tensor: only wte differs in size, and its first rows are the real ones.
  for (std::size_t i = 0; i < cpu.tensors().size(); ++i) {
    const auto& c = cpu.tensors()[i];
    const auto& g = gpu.tensors()[i];
    for (std::size_t j = 0; j < c.size; ++j) out[g.offset + j] = static_cast<float>(params[c.offset + j]);
  }
  return out;
}

namespace {

std::size_t sz(long long v) { return static_cast<std::size_t>(v); }

const GptConfig& checked(const GptConfig& c, int B, int T) {
  validate(c);
  if (c.channels % 8 != 0)
    throw std::invalid_argument(fmt::format("channels {} is not a multiple of 8 (the matmuls need 16-byte rows)", c.channels));
  if ((c.channels / c.heads) % 8 != 0)
    throw std::invalid_argument(fmt::format("head size {} is not a multiple of 8", c.channels / c.heads));
  if (B < 1 || T < 1 || T > c.max_seq || T % 8 != 0)
    throw std::invalid_argument(fmt::format("micro-batch {}x{}: need B >= 1 and 8 <= T <= {} with T a multiple of 8",
                                            B, T, c.max_seq));
  return c;
}

}  // namespace

GptModel::GptModel(const GptConfig& config, int B, int T, ModelOptions options)
    : config_(checked(config, B, T)),
      layout_(padded(config)),
      B_(B),
      T_(T),
      matmul_(std::size_t{32} << 20, options.matmul_autotune),
      embedding_rows_(static_cast<int>(layout_[Param::wte].shape[0]), config_.channels) {
  const long long L = config_.layers, C = config_.channels, NH = config_.heads;
  const long long N = static_cast<long long>(B) * T, Vp = layout_[Param::wte].shape[0];
  const long long NC = N * C, BHTT = B * NH * static_cast<long long>(T) * T;
  master_ = DeviceBuffer<float>(layout_.total());
  grads_ = DeviceBuffer<float>(layout_.total());
  params_ = DeviceBuffer<bf16>(layout_.total());
  tokens_ = DeviceBuffer<int>(sz(N));
  targets_ = DeviceBuffer<int>(sz(N));

  encoded_ = DeviceBuffer<bf16>(sz(NC));
  ln1_ = DeviceBuffer<bf16>(sz(L * NC));
  qkvr_ = DeviceBuffer<bf16>(sz(L * 3 * NC));
  flash_ = options.flash_attention && train::flash_attention_supported(T, static_cast<int>(NH), static_cast<int>(NH),
                                                                      static_cast<int>(C / NH));
  if (flash_) {
    flash_backward_variant_ = train::flash_backward_default_variant();
    lse_ = DeviceBuffer<float>(sz(L * B * NH * T));
    delta_ = DeviceBuffer<float>(sz(B * NH * T));
    if (train::flash_backward_stores_ds(flash_backward_variant_))
      flash_ds_ = DeviceBuffer<bf16>(train::flash_backward_ds_workspace_elems(B, T, static_cast<int>(NH)));
    if (train::flash_backward_sums_columns(flash_backward_variant_))
      qkv_block_sums_ = DeviceBuffer<float>(sz(B * (T / train::kFlashBlock) * 3 * C));
  } else {
    att_ = DeviceBuffer<bf16>(sz(L * BHTT));
    scores_ = DeviceBuffer<bf16>(sz(BHTT));
    dqkvr_ = DeviceBuffer<bf16>(sz(3 * NC));
  }
  atty_ = DeviceBuffer<bf16>(sz(L * NC));
  res2_ = DeviceBuffer<bf16>(sz(L * NC));
  ln2_ = DeviceBuffer<bf16>(sz(L * NC));
  fch_ = DeviceBuffer<bf16>(sz(L * 4 * NC));
  fch_gelu_ = DeviceBuffer<bf16>(sz(L * 4 * NC));
  res3_ = DeviceBuffer<bf16>(sz(L * NC));
  lnf_ = DeviceBuffer<bf16>(sz(NC));
  logits_ = DeviceBuffer<bf16>(sz(N * Vp));
  for (auto* b : {&ln1_mean_, &ln1_rstd_, &ln2_mean_, &ln2_rstd_}) *b = DeviceBuffer<float>(sz(L * N));
  lnf_mean_ = DeviceBuffer<float>(sz(N));
  lnf_rstd_ = DeviceBuffer<float>(sz(N));
  losses_ = DeviceBuffer<float>(sz(N));

  qkv_ = DeviceBuffer<bf16>(sz(3 * NC));
  nc_a_ = DeviceBuffer<bf16>(sz(NC));
  nc_b_ = DeviceBuffer<bf16>(sz(NC));
  dres_ = DeviceBuffer<bf16>(sz(NC));
  d4c_ = DeviceBuffer<bf16>(sz(4 * NC));

  const int N32 = static_cast<int>(N), C32 = static_cast<int>(C);
  fuse_residual_ = options.allow_fusion &&
                   matmul_.supports(Matmul::forward_shape(N32, C32, C32, Epilogue::Bias, true)) &&
                   matmul_.supports(Matmul::forward_shape(N32, 4 * C32, C32, Epilogue::Bias, true));
  fuse_gelu_ = options.allow_fusion &&
               matmul_.supports(Matmul::forward_shape(N32, C32, 4 * C32, Epilogue::GeluAuxBias, false)) &&
               matmul_.supports(Matmul::backward_input_shape(N32, 4 * C32, C32, Epilogue::DGelu));

  // The weight matrices' gradients come from the matmuls, which overwrite them in a step's
  // first backward; the rest are sums that kernels add into.
  for (std::size_t i = 0; i < layout_.tensors().size(); ++i) {
    const auto p = static_cast<Param>(i);
    if (p == Param::wte || p == Param::qkvw || p == Param::attprojw || p == Param::fcw || p == Param::fcprojw)
      continue;  // from the matmuls
    const ParamTensor& t = layout_[p];
    if (!summed_grad_spans_.empty() && summed_grad_spans_.back().first + summed_grad_spans_.back().second == t.offset)
      summed_grad_spans_.back().second += t.size;
    else
      summed_grad_spans_.emplace_back(t.offset, t.size);
  }

  GPUACCEPT_CUDA_CHECK(cudaMemset(master_.get(), 0, master_.bytes()));
  GPUACCEPT_CUDA_CHECK(cudaMemset(grads_.get(), 0, grads_.bytes()));
  GPUACCEPT_CUDA_CHECK(cudaMemset(params_.get(), 0, params_.bytes()));
}

std::size_t GptModel::device_bytes() const {
  std::size_t total = master_.bytes() + grads_.bytes() + params_.bytes() + tokens_.bytes() + targets_.bytes() +
                      layout_[Param::wte].size * sizeof(float);  // embedding_rows_ (at most one row per token)
  for (const auto* b : {&encoded_, &ln1_, &qkvr_, &att_, &atty_, &res2_, &ln2_, &fch_, &fch_gelu_, &res3_, &lnf_,
                        &logits_, &qkv_, &scores_, &nc_a_, &nc_b_, &dres_, &d4c_, &dqkvr_, &flash_ds_})
    total += b->bytes();
  for (const auto* b : {&ln1_mean_, &ln1_rstd_, &ln2_mean_, &ln2_rstd_, &lnf_mean_, &lnf_rstd_, &losses_, &lse_, &delta_})
    total += b->bytes();
  return total;
}

std::string GptModel::fusions() const {
  if (fuse_residual_ && fuse_gelu_) return "residual+gelu";
  if (fuse_residual_) return "residual";
  return fuse_gelu_ ? "gelu" : "none";
}

const bf16* GptModel::p(Param t, int layer) const {
  const auto& d = layout_[t];
  return params_.get() + d.offset + static_cast<std::size_t>(layer) * d.layer_size();
}

float* GptModel::g(Param t, int layer) const {
  const auto& d = layout_[t];
  return grads_.get() + d.offset + static_cast<std::size_t>(layer) * d.layer_size();
}

void GptModel::set_master(std::span<const float> host, cudaStream_t stream) {
  if (host.size() != layout_.total())
    throw std::invalid_argument(fmt::format("set_master: {} values for {} parameters", host.size(), layout_.total()));
  GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(master_.get(), host.data(), master_.bytes(), cudaMemcpyHostToDevice, stream));
  train::cast_to_bf16(params_.get(), master_.get(), layout_.total(), stream);
}

void GptModel::refresh_params(cudaStream_t stream) {
  train::cast_to_bf16(params_.get(), master_.get(), layout_.total(), stream);
}

// ---------------------------------------------------------------- attention products
// Per head, q, k, v are row-major (T, HS) and the scores (T, T). cuBLAS is column-major, so
// each row-major matrix is read as its transpose: a product X = Y Z in row-major terms is
// X^T = Z^T Y^T in cuBLAS's.
//
// Causality: query t1 only sees keys t2 <= t1. The products are cut into chunks of queries
// (or of keys), each over the keys (queries) it can see, which skips most of the masked upper
// triangle: with 4 chunks 10/16 of the full T x T work. The score entries never computed are
// never read (the softmax kernels read t2 <= t1 only) and att's upper triangle is written 0.

int GptModel::attention_chunks() const {
  for (int c : {4, 2})
    if (T_ % (16 * c) == 0) return c;  // chunk offsets stay 32-byte aligned for cuBLASLt
  return 1;
}

void GptModel::head_gemm(bool ta, bool tb, int m, int n, int k, const bf16* a, long long lda, long long sa,
                         const bf16* b, long long ldb, long long sb, bf16* d, long long ldd, long long sd,
                         cudaStream_t s) {
  GemmShape g;
  g.transa = ta, g.transb = tb;
  g.m = m, g.n = n, g.k = k;
  g.lda = lda, g.ldb = ldb, g.ldd = ldd;
  g.batch = B_ * config_.heads;
  g.stride_a = sa, g.stride_b = sb, g.stride_d = sd;
  matmul_.run(g, a, b, d, nullptr, s);
}

// scores[t1,t2] = q[t1,:] . k[t2,:]     per query chunk [c0, c0+H), keys [0, c0+H):
//   column-major scores^T block (keys x queries) = k^T (keys x HS) q (HS x queries)
void GptModel::attention_scores(bf16* scores, const bf16* q, const bf16* k, cudaStream_t s) {
  const int T = T_, HS = config_.channels / config_.heads, H = T / attention_chunks();
  const long long THS = static_cast<long long>(T) * HS, TT = static_cast<long long>(T) * T;
  for (int c0 = 0; c0 < T; c0 += H)
    head_gemm(true, false, c0 + H, H, HS, k, HS, THS, q + static_cast<long long>(c0) * HS, HS, THS,
              scores + static_cast<long long>(c0) * T, T, TT, s);
}

// y[t1,:] = sum_{t2 <= t1} att[t1,t2] v[t2,:]     per query chunk, over keys [0, c0+H):
//   column-major y^T (HS x queries) = v^T (HS x keys) att^T (keys x queries)
void GptModel::attention_values(bf16* y, const bf16* att, const bf16* v, cudaStream_t s) {
  const int T = T_, HS = config_.channels / config_.heads, H = T / attention_chunks();
  const long long THS = static_cast<long long>(T) * HS, TT = static_cast<long long>(T) * T;
  for (int c0 = 0; c0 < T; c0 += H)
    head_gemm(false, false, HS, H, c0 + H, v, HS, THS, att + static_cast<long long>(c0) * T, T, TT,
              y + static_cast<long long>(c0) * HS, HS, THS, s);
}

// From dy (B,NH,T,HS), the gradient of the attention output per head, to dqkv (B,T,3C) in qkv_:
//   datt = dy v^T;  dv = att^T dy;  dscores = softmax backward (scaled);  dq = dscores k;  dk = dscores^T q
// datt and dq go by query chunk (keys [0, c0+H)), dv and dk by key chunk (queries [c0, T)).
void GptModel::attention_backward(const bf16* dy, int layer, cudaStream_t s) {
  const int B = B_, T = T_, NH = config_.heads, C = config_.channels, HS = C / NH, H = T / attention_chunks();
  const long long NC = static_cast<long long>(B) * T * C, THS = static_cast<long long>(T) * HS,
                  TT = static_cast<long long>(T) * T;
  const bf16* q = qkvr_.get() + layer * 3 * NC;
  const bf16* k = q + NC;
  const bf16* v = q + 2 * NC;
  const bf16* att = att_.get() + layer * B * NH * TT;
  bf16* dq = dqkvr_.get();
  bf16* dk = dq + NC;
  bf16* dv = dq + 2 * NC;
  bf16* datt = scores_.get();

  for (long long c0 = 0; c0 < T; c0 += H) {
    // datt^T block (keys x queries) = v^T (keys x HS) dy^T (HS x queries)
    head_gemm(true, false, static_cast<int>(c0) + H, H, HS, v, HS, THS, dy + c0 * HS, HS, THS, datt + c0 * T, T, TT, s);
    // dv^T (HS x keys of the chunk) = dy^T (HS x queries >= c0) att (queries x keys), att^T read transposed
    head_gemm(false, true, HS, H, T - static_cast<int>(c0), dy + c0 * HS, HS, THS, att + c0 * T + c0, T, TT,
              dv + c0 * HS, HS, THS, s);
  }
  train::causal_softmax_backward(datt, datt, att, 1.0f / std::sqrt(static_cast<float>(HS)), B * NH, T, s);
  for (long long c0 = 0; c0 < T; c0 += H) {
    // dq^T (HS x queries) = k^T (HS x keys) dscores^T (keys x queries)
    head_gemm(false, false, HS, H, static_cast<int>(c0) + H, k, HS, THS, datt + c0 * T, T, TT, dq + c0 * HS, HS,
              THS, s);
    // dk^T (HS x keys of the chunk) = q^T (HS x queries >= c0) dscores (queries x keys), read transposed
    head_gemm(false, true, HS, H, T - static_cast<int>(c0), q + c0 * HS, HS, THS, datt + c0 * T + c0, T, TT,
              dk + c0 * HS, HS, THS, s);
  }
  merge_qkv(qkv_.get(), dq, dk, dv, B, T, NH, HS, s);
}

// ---------------------------------------------------------------- forward

void GptModel::forward(float dloss, cudaStream_t s) {
  const int B = B_, T = T_, C = config_.channels, NH = config_.heads, HS = C / NH, L = config_.layers;
  const int N = B * T, V = config_.vocab, Vp = static_cast<int>(layout_[Param::wte].shape[0]);
  const long long NC = static_cast<long long>(N) * C, BHTT = static_cast<long long>(B) * NH * T * T;
  const float scale = 1.0f / std::sqrt(static_cast<float>(HS));

  encoder_forward(encoded_.get(), tokens_.get(), p(Param::wte), p(Param::wpe), B, T, C, s);
  for (int l = 0; l < L; ++l) {
    const NvtxRange range(fmt::format("layer {} forward", l));  // the launches, on the host's timeline
    const bf16* in = l == 0 ? encoded_.get() : res3_.get() + (l - 1) * NC;
    bf16* ln1 = ln1_.get() + l * NC;
    bf16* q = qkvr_.get() + l * 3 * NC;
    bf16* att = flash_ ? nullptr : att_.get() + l * BHTT;
    bf16* atty = atty_.get() + l * NC;
    bf16* res2 = res2_.get() + l * NC;
    bf16* ln2 = ln2_.get() + l * NC;
    bf16* fch = fch_.get() + l * 4 * NC;
    bf16* fch_gelu = fch_gelu_.get() + l * 4 * NC;
    bf16* res3 = res3_.get() + l * NC;

    // Attention: r2 = r + attproj(attention(qkv(ln1(r))))
    layernorm_forward(ln1, ln1_mean_.get() + l * N, ln1_rstd_.get() + l * N, in, p(Param::ln1w, l),
                      p(Param::ln1b, l), N, C, s);
    if (flash_) {
      // q, k, v read in place from the projection's (B, T, 3C) output; out written as (B, T, C).
      matmul_.linear_forward(q, ln1, p(Param::qkvw, l), p(Param::qkvb, l), N, C, 3 * C, s);
      train::flash_attention_forward(atty, lse_.get() + static_cast<long long>(l) * B * NH * T, q, q + C, q + 2 * C,
                                     train::FlashShape::packed_qkv(B, T, NH, HS), s);
    } else {
      // Heads made contiguous (B, NH, T, HS) for the batched GEMMs.
      matmul_.linear_forward(qkv_.get(), ln1, p(Param::qkvw, l), p(Param::qkvb, l), N, C, 3 * C, s);
      split_qkv(q, q + NC, q + 2 * NC, qkv_.get(), B, T, NH, HS, s);
      attention_scores(scores_.get(), q, q + NC, s);
      train::causal_softmax_forward(att, scores_.get(), scale, B * NH, T, s);
      attention_values(nc_a_.get(), att, q + 2 * NC, s);
      merge_heads(atty, nc_a_.get(), B, T, NH, HS, s);
    }
    if (fuse_residual_) {
      matmul_.linear_forward(res2, atty, p(Param::attprojw, l), p(Param::attprojb, l), N, C, C, s, in);
    } else {
      matmul_.linear_forward(nc_b_.get(), atty, p(Param::attprojw, l), p(Param::attprojb, l), N, C, C, s);
      residual_forward(res2, in, nc_b_.get(), static_cast<std::size_t>(NC), s);
    }

    // MLP: r3 = r2 + fcproj(gelu(fc(ln2(r2))))
    layernorm_forward(ln2, ln2_mean_.get() + l * N, ln2_rstd_.get() + l * N, res2, p(Param::ln2w, l),
                      p(Param::ln2b, l), N, C, s);
    if (fuse_gelu_) {
      matmul_.linear_forward_gelu(fch_gelu, fch, ln2, p(Param::fcw, l), p(Param::fcb, l), N, C, 4 * C, s);
    } else {
      matmul_.linear_forward(fch, ln2, p(Param::fcw, l), p(Param::fcb, l), N, C, 4 * C, s);
      gelu_forward(fch_gelu, fch, static_cast<std::size_t>(4 * NC), s);
    }
    if (fuse_residual_) {
      matmul_.linear_forward(res3, fch_gelu, p(Param::fcprojw, l), p(Param::fcprojb, l), N, 4 * C, C, s, res2);
    } else {
      matmul_.linear_forward(nc_b_.get(), fch_gelu, p(Param::fcprojw, l), p(Param::fcprojb, l), N, 4 * C, C, s);
      residual_forward(res3, res2, nc_b_.get(), static_cast<std::size_t>(NC), s);
    }
  }
  // Output: logits = lnf(r_L) wte^T (tied embeddings), then softmax cross-entropy.
  const NvtxRange range("head forward and loss");
  layernorm_forward(lnf_.get(), lnf_mean_.get(), lnf_rstd_.get(), res3_.get() + (L - 1) * NC, p(Param::lnfw),
                    p(Param::lnfb), N, C, s);
  matmul_.linear_forward(logits_.get(), lnf_.get(), p(Param::wte), nullptr, N, C, Vp, s);
  cross_entropy_forward_backward(logits_.get(), losses_.get(), targets_.get(), N, V, Vp, dloss, s);
}

// ---------------------------------------------------------------- backward

void GptModel::backward(cudaStream_t s, Grads grads, const std::function<void(int)>& layer_done) {
  const int B = B_, T = T_, C = config_.channels, NH = config_.heads, HS = C / NH, L = config_.layers;
  const int N = B * T, Vp = static_cast<int>(layout_[Param::wte].shape[0]);
  const long long NC = static_cast<long long>(N) * C;
  bf16* dres = dres_.get();  // d(loss)/d(residual stream), flowing down through the layers
  // A step's first backward writes the weight matrices' gradients with the matmuls' beta = 0
  // and zeroes only the rest: zeroing all of grads_ first (0.5 GB for GPT-2 124M) and then
  // reading the zeros back into every weight-gradient matmul moved 1 GB a step for nothing.
  const bool accumulate = grads == Grads::Accumulate;
  if (!accumulate)
    for (const auto& [offset, count] : summed_grad_spans_)
      GPUACCEPT_CUDA_CHECK(cudaMemsetAsync(grads_.get() + offset, 0, count * sizeof(float), s));

  {
    const NvtxRange range("head backward");
    // Output: logits_ holds dlogits. dwte (+)= dlogits^T lnf; dlnf = dlogits wte.
    matmul_.linear_backward_weight(g(Param::wte), logits_.get(), lnf_.get(), N, C, Vp, s, accumulate);
    matmul_.linear_backward_input(nc_a_.get(), logits_.get(), p(Param::wte), N, C, Vp, s);
    GPUACCEPT_CUDA_CHECK(cudaMemsetAsync(dres, 0, static_cast<std::size_t>(NC) * sizeof(bf16), s));
    // dres is now d(r3) of the last layer, its MLP projection's output gradient: the
    // projection's bias gradient is summed on the way (and so on down, below).
    layernorm_backward(dres, g(Param::lnfw), g(Param::lnfb), g(Param::fcprojb, L - 1), nc_a_.get(),
                       res3_.get() + (L - 1) * NC, p(Param::lnfw), lnf_mean_.get(), lnf_rstd_.get(), N, C, s);
  }
  layer_done(head_stage(L));

  for (int l = L - 1; l >= 0; --l) {
    const NvtxRange range(fmt::format("layer {} backward", l));  // layer_done's bucket inside it
    const bf16* in = l == 0 ? encoded_.get() : res3_.get() + (l - 1) * NC;
    const bf16* ln1 = ln1_.get() + l * NC;
    const bf16* atty = atty_.get() + l * NC;
    const bf16* res2 = res2_.get() + l * NC;
    const bf16* ln2 = ln2_.get() + l * NC;
    const bf16* fch = fch_.get() + l * 4 * NC;
    const bf16* fch_gelu = fch_gelu_.get() + l * 4 * NC;

    // MLP. dres is d(r3); the residual passes it through unchanged, LayerNorm adds to it.
    // The projections' bias gradients (fcprojb, attprojb) are dres's column sums: the
    // LayerNorm backward that wrote dres last summed them already.
    matmul_.linear_backward_weight(g(Param::fcprojw, l), dres, fch_gelu, N, 4 * C, C, s, accumulate);
    if (fuse_gelu_) {
      matmul_.linear_backward_input_dgelu(d4c_.get(), dres, p(Param::fcprojw, l), fch, N, 4 * C, C, s);
    } else {
      matmul_.linear_backward_input(d4c_.get(), dres, p(Param::fcprojw, l), N, 4 * C, C, s);
      gelu_backward_inplace(d4c_.get(), fch, static_cast<std::size_t>(4 * NC), s);
    }
    matmul_.linear_backward_weight(g(Param::fcw, l), d4c_.get(), ln2, N, C, 4 * C, s, accumulate);
    bias_backward(g(Param::fcb, l), d4c_.get(), N, 4 * C, s);
    matmul_.linear_backward_input(nc_a_.get(), d4c_.get(), p(Param::fcw, l), N, C, 4 * C, s);
    layernorm_backward(dres, g(Param::ln2w, l), g(Param::ln2b, l), g(Param::attprojb, l), nc_a_.get(), res2,
                       p(Param::ln2w, l), ln2_mean_.get() + l * N, ln2_rstd_.get() + l * N, N, C, s);

    // Attention. dres is now d(r2).
    matmul_.linear_backward_weight(g(Param::attprojw, l), dres, atty, N, C, C, s, accumulate);
    matmul_.linear_backward_input(nc_a_.get(), dres, p(Param::attprojw, l), N, C, C, s);
    if (flash_) {
      // dq, dk, dv into qkv_ as (B, T, 3C), from the forward's (B, T, 3C) q, k, v in place;
      // with their column sums by blocks of 64 positions where the kernels write them.
      const bf16* qkv = qkvr_.get() + l * 3 * NC;
      float* sums = qkv_block_sums_.get();
      const train::FlashColumnSums qkv_sums = sums ? train::FlashColumnSums{sums, sums + C, sums + 2 * C}
                                                   : train::FlashColumnSums{};
      train::flash_attention_backward(qkv_.get(), qkv_.get() + C, qkv_.get() + 2 * C, delta_.get(), nc_a_.get(), atty,
                                      lse_.get() + static_cast<long long>(l) * B * NH * T, qkv, qkv + C, qkv + 2 * C,
                                      train::FlashShape::packed_qkv(B, T, NH, HS), s, flash_backward_variant_,
                                      flash_ds_.get(), qkv_sums);
    } else {
      split_heads(nc_b_.get(), nc_a_.get(), B, T, NH, HS, s);
      attention_backward(nc_b_.get(), l, s);
    }
    // qkv_ now holds dqkv (B, T, 3C)
    matmul_.linear_backward_weight(g(Param::qkvw, l), qkv_.get(), ln1, N, C, 3 * C, s, accumulate);
    if (flash_ && qkv_block_sums_.get())
      add_block_sums(g(Param::qkvb, l), qkv_block_sums_.get(), B * (T / train::kFlashBlock), 3 * C, s);
    else
      bias_backward(g(Param::qkvb, l), qkv_.get(), N, 3 * C, s);
    matmul_.linear_backward_input(nc_a_.get(), qkv_.get(), p(Param::qkvw, l), N, C, 3 * C, s);
    // dres becomes d(r3) of layer l - 1: that layer's fcprojb gradient (its bucket is
    // reduced after layer_done(l - 1), so this write is in time).
    layernorm_backward(dres, g(Param::ln1w, l), g(Param::ln1b, l), l > 0 ? g(Param::fcprojb, l - 1) : nullptr,
                       nc_a_.get(), in, p(Param::ln1w, l), ln1_mean_.get() + l * N, ln1_rstd_.get() + l * N, N, C, s);
    layer_done(l);
  }
  const NvtxRange range("embedding backward");
  encoder_backward(embedding_rows_.rows(), embedding_rows_.row_of_token(), g(Param::wpe), dres, tokens_.get(), B, T,
                   C, s);
  layer_done(kEmbeddingsStage);
}

}  // namespace gpuaccept::ddp::gpu
