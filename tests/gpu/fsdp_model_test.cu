// GPU check of the fsdp-lora phase's model (phases/fsdp-lora/gpu/qwen_model.h): Qwen2 with
// LoRA, forward, per-layer recompute and backward on one GPU, against the float64 CPU
// reference (phases/fsdp-lora/cpu_reference.h) on the very same numbers: the base and the
// adapters are rounded to bf16 first and the reference runs on those values (as doubles), and
// the GPU's LoRA dropout masks are replayed on the CPU from the kernels' counter-based RNG
// (dropout_keep, kernels.h). What is left to differ is bf16 storage of activations and the
// order of fp32 sums.
//
// Shapes: qwen_tiny (V=13, C=16, L=2, NH=4, NKV=2, HD=4, I=24) with rank 2 on all seven
// projections, dropout 0 and 0.25; a mid shape (V=1000, C=256, L=2, NH=4, NKV=2, HD=64, I=512,
// B=2, T=128) with rank 8 on q/k/v/o, dropout 0 and 0.1, and on all seven with dropout 0.1;
// mid128 (C=512, NH=4, NKV=2, HD=128: Qwen2's head size, so FlashAttention; T=192 and 128).
// The "naive" cases run every matmul on the plain naive_gemm kernel instead of cuBLASLt: if
// they pass where the cuBLASLt ones fail, the fault is in a matmul's mapping (gpu/gemm.h).
//
// One line per check:
//   model <check> <case> <numbers> tol=... PASS|FAIL
// checks: loss (|gpu - cpu| in nats), forward_only (the same without dropout or backward),
// grad <layer>.<proj>.<A|B> (||g_gpu - g_cpu|| / ||g_cpu||), d_embedded (the gradient leaving
// the first layer, same measure), accumulate (a second forward_backward gives the same loss and
// doubles the gradients), weight_order (two cases take their weights through a WeightSource
// that checks the documented order of acquire/release; mid-all-p0.1 also cuts the logits into
// three chunks), recompute_off (the model keeping every layer's activations gives the same bits
// as the one recomputing them, both on fixed matmul algorithms); host checks: gemm_mapping (gpu/gemm.h's column-major call against a
// row-major loop, every transposition), lora_layout (flat layout round trip and alignment).
// attention <impl> <shape> <y|dq|dk|dv> (FlashAttention -- each backward variant, "flash
// bwd_variant=N" -- and GemmAttention alone against a float64 loop, relative L2),
// attention_deterministic (four flash passes, same bits; at the timing shape two);
// attention_slots (a slot's backward after another slot's forward: the one-slot bits);
// attention_variants_agree (each flash backward variant against variant 0 at the timing shape);
// "model info attention_timing" gives all at B=2, T=4096, NH=28, NKV=4, HD=128, with each flash
// variant's kernels' registers, shared memory and CTAs per SM.
// "model info" lines are not checks. Exit status 1 if any check fails.
//   build/bin/fsdp-model-tests              (needs a GPU; ~10 s on an H100, mostly the CPU reference)
//   build/bin/fsdp-model-tests --cpu-only   (host checks and the CPU reference only: no GPU needed)
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "cuda/cuda_check.h"
#include "cuda/cuda_handles.h"
#include "fsdp-lora/cpu_reference.h"
#include "fsdp-lora/gpu/attention.h"
#include "fsdp-lora/gpu/gemm.h"
#include "fsdp-lora/gpu/kernels.h"
#include "fsdp-lora/reference_check.h"
#include "fsdp-lora/gpu/lora_linear.h"
#include "fsdp-lora/gpu/qwen_model.h"
#include "fsdp-lora/qwen_config.h"
#include "fsdp-lora/shard_plan.h"
#include "attention_reference.h"

namespace {

namespace fs = gpuaccept::fsdp;
namespace kg = gpuaccept::fsdp::gpu;
using gpuaccept::test::AttentionGrads;
using gpuaccept::test::attention_reference;
using bf16 = __nv_bfloat16;
using gpuaccept::DeviceBuffer;

int g_failures = 0;

void check_line(const std::string& check, const std::string& name, const std::string& numbers, bool pass) {
  std::printf("model %s %s %s %s\n", check.c_str(), name.c_str(), numbers.c_str(), pass ? "PASS" : "FAIL");
  std::fflush(stdout);
  if (!pass) ++g_failures;
}

std::string fmt_double(const char* key, double v) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%s=%.6g", key, v);
  return buf;
}

// An exception inside a check is that check's FAIL, with the message (a CUDA error names its call).
void guarded(const std::string& check, const std::string& name, const std::function<void()>& body) {
  try {
    body();
  } catch (const std::exception& e) {
    check_line(check, name, std::string("ERROR: ") + e.what(), false);
  }
}

// ---- host data -------------------------------------------------------------------------

struct Rng {  // splitmix64: the same numbers on every machine
  std::uint64_t state;
  std::uint64_t next() { return kg::splitmix64(state += 0x9e3779b97f4a7c15ull); }
  double uniform(double lo, double hi) { return lo + (hi - lo) * static_cast<double>(next() >> 11) * 0x1p-53; }
  int below(int n) { return static_cast<int>(next() % static_cast<std::uint64_t>(n)); }
};

double round_bf16(double v) { return static_cast<double>(__bfloat162float(__float2bfloat16(static_cast<float>(v)))); }
void round_all(std::vector<double>& v) {
  for (double& x : v) x = round_bf16(x);
}
void round_base(fs::QwenBaseWeights& b) {
  round_all(b.embed);
  round_all(b.head);
  round_all(b.w_final);
  for (auto& l : b.layers) {
    round_all(l.w_in);
    round_all(l.w_post);
    for (fs::Projection p : fs::kAllProjections) {
      round_all(l.weight(p));
      if (fs::projection_has_bias(p)) round_all(l.bias(p));
    }
  }
}
void round_lora(fs::LoraWeights& w) {
  for (auto& layer : w.layers)
    for (auto& ad : layer) {
      round_all(ad.A);
      round_all(ad.B);
    }
}

std::vector<bf16> to_bf16(const std::vector<double>& v) {
  std::vector<bf16> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = __float2bfloat16(static_cast<float>(v[i]));
  return out;
}

// The base in the GPU's layout: every layer a flat LayerLayout buffer, laid end to end (each
// layer's numel is a multiple of 64, so each starts 128-byte aligned).
struct GpuLayoutBase {
  std::vector<bf16> layers;  // (L, layout.numel)
  std::vector<bf16> embed, head, final_norm;
};
GpuLayoutBase to_gpu_layout(const fs::QwenConfig& c, const fs::QwenBaseWeights& base) {
  const fs::LayerLayout layout = fs::make_layer_layout(c);
  GpuLayoutBase out;
  out.layers.assign(static_cast<std::size_t>(c.layers) * layout.numel, __float2bfloat16(0.f));
  for (int l = 0; l < c.layers; ++l) {
    const fs::QwenLayerWeights& w = base.layers[static_cast<std::size_t>(l)];
    bf16* flat = out.layers.data() + static_cast<std::size_t>(l) * layout.numel;
    auto put = [&](const char* suffix, const std::vector<double>& v) {
      const fs::TensorSlot& slot = layout.find(suffix);
      if (slot.numel != v.size()) throw std::logic_error(std::string("test: size of ") + suffix);
      for (std::size_t i = 0; i < v.size(); ++i) flat[slot.offset + i] = __float2bfloat16(static_cast<float>(v[i]));
    };
    put("input_layernorm.weight", w.w_in);
    put("self_attn.q_proj.weight", w.wq);
    put("self_attn.q_proj.bias", w.bq);
    put("self_attn.k_proj.weight", w.wk);
    put("self_attn.k_proj.bias", w.bk);
    put("self_attn.v_proj.weight", w.wv);
    put("self_attn.v_proj.bias", w.bv);
    put("self_attn.o_proj.weight", w.wo);
    put("post_attention_layernorm.weight", w.w_post);
    put("mlp.gate_proj.weight", w.wg);
    put("mlp.up_proj.weight", w.wu);
    put("mlp.down_proj.weight", w.wd);
  }
  out.embed = to_bf16(base.embed);
  out.head = to_bf16(base.head);
  out.final_norm = to_bf16(base.w_final);
  return out;
}

using fs::rel_l2;
using fs::replay_masks;

// ---- host checks -------------------------------------------------------------------------

// What cuBLASLt computes for a GemmShape (column-major, element (r, c) of a matrix at
// r + c * ld), written from its definition: the reference for gpu/gemm.h's column_major().
void column_major_reference(const gpuaccept::train::GemmShape& s, const bf16* a, const bf16* b, void* d,
                            const void* c, const bf16* bias) {
  for (int z = 0; z < s.batch; ++z)
    for (int i = 0; i < s.m; ++i)
      for (int j = 0; j < s.n; ++j) {
        double acc = 0;
        for (int k = 0; k < s.k; ++k) {
          const bf16 av = s.transa ? a[z * s.stride_a + k + static_cast<long long>(i) * s.lda]
                                   : a[z * s.stride_a + i + static_cast<long long>(k) * s.lda];
          const bf16 bv = s.transb ? b[z * s.stride_b + j + static_cast<long long>(k) * s.ldb]
                                   : b[z * s.stride_b + k + static_cast<long long>(j) * s.ldb];
          acc += static_cast<double>(__bfloat162float(av)) * static_cast<double>(__bfloat162float(bv));
        }
        if (s.epilogue == gpuaccept::train::Epilogue::Bias) acc += __bfloat162float(bias[i]);
        const long long at = z * s.stride_d + i + static_cast<long long>(j) * s.ldd;
        if (s.accumulate)
          acc += s.fp32_out ? static_cast<const float*>(c)[at] : __bfloat162float(static_cast<const bf16*>(c)[at]);
        if (s.fp32_out)
          static_cast<float*>(d)[at] = static_cast<float>(acc);
        else
          static_cast<bf16*>(d)[at] = __float2bfloat16(static_cast<float>(acc));
      }
}

// Every combination of transpositions, output type, accumulation, bias and batching, with
// padded leading dimensions: the row-major product computed by plain loops here, by
// row_major_gemm_value (naive_gemm's arithmetic), and by the column-major call gpu/gemm.h
// makes, run through the reference above, must agree.
void test_gemm_mapping() {
  Rng rng{77};
  double worst = 0;
  int cases = 0;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (int fp32 = 0; fp32 < 2; ++fp32)
        for (int acc = 0; acc < 2; ++acc)
          for (int bias = 0; bias < 2; ++bias)
            for (int batch = 1; batch <= 2; ++batch) {
              const int M = 5, N = 7, K = 3;
              // Stored shapes: A (M, K) or, transposed, (K, M); B (K, N) or (N, K); padded rows.
              const long long lda = (ta ? M : K) + 2, ldb = (tb ? K : N) + 1, ldd = N + 3;
              const long long sa = (ta ? K : M) * lda + 4, sb = (tb ? N : K) * ldb + 1, sd = M * ldd + 2;
              std::vector<bf16> A(static_cast<std::size_t>(sa * batch)), B(static_cast<std::size_t>(sb * batch)),
                  bvec(static_cast<std::size_t>(N));
              for (auto* v : {&A, &B, &bvec})
                for (bf16& x : *v) x = __float2bfloat16(static_cast<float>(rng.uniform(-1, 1)));
              const std::size_t nd = static_cast<std::size_t>(sd * batch);
              std::vector<float> Cf(nd), Df(nd), Rf(nd);
              std::vector<bf16> Cb(nd), Db(nd), Rb(nd);
              for (std::size_t i = 0; i < nd; ++i) {
                Cf[i] = static_cast<float>(rng.uniform(-1, 1));
                Cb[i] = __float2bfloat16(Cf[i]);
              }
              kg::RowMajorGemm g{.M = M, .N = N, .K = K,
                                 .a = A.data(), .lda = lda, .ta = ta != 0, .stride_a = sa,
                                 .b = B.data(), .ldb = ldb, .tb = tb != 0, .stride_b = sb,
                                 .d = fp32 ? static_cast<void*>(Df.data()) : static_cast<void*>(Db.data()),
                                 .ldd = ldd, .stride_d = sd, .fp32_out = fp32 != 0, .accumulate = acc != 0,
                                 .c = fp32 ? static_cast<const void*>(Cf.data()) : static_cast<const void*>(Cb.data()),
                                 .bias = bias ? bvec.data() : nullptr, .batch = batch};
              const kg::ColumnMajorCall call = kg::column_major(g);
              column_major_reference(call.shape, static_cast<const bf16*>(call.a), static_cast<const bf16*>(call.b), g.d,
                                     g.c, g.bias);
              for (int z = 0; z < batch; ++z)
                for (int i = 0; i < M; ++i)
                  for (int j = 0; j < N; ++j) {
                    double want = 0;
                    for (int k = 0; k < K; ++k) {
                      const bf16 av = ta ? A[static_cast<std::size_t>(z * sa + k * lda + i)]
                                         : A[static_cast<std::size_t>(z * sa + i * lda + k)];
                      const bf16 bv = tb ? B[static_cast<std::size_t>(z * sb + j * ldb + k)]
                                         : B[static_cast<std::size_t>(z * sb + k * ldb + j)];
                      want += static_cast<double>(__bfloat162float(av)) * __bfloat162float(bv);
                    }
                    if (bias) want += __bfloat162float(bvec[static_cast<std::size_t>(j)]);
                    const std::size_t at = static_cast<std::size_t>(z * sd + i * ldd + j);
                    if (acc) want += fp32 ? Cf[at] : __bfloat162float(Cb[at]);
                    const double mapped = fp32 ? Df[at] : __bfloat162float(Db[at]);
                    const double direct = kg::row_major_gemm_value(g, z, i, j);
                    // bf16 output: one rounding (2^-9 relative); fp32: float sums of 3 terms
                    const double tol = (fp32 ? 1e-5 : 1e-2) * std::max(1.0, std::abs(want));
                    worst = std::max({worst, std::abs(mapped - want) / tol, std::abs(direct - want) / 1e-5});
                  }
              ++cases;
            }
  check_line("gemm_mapping", "host", "combinations=" + std::to_string(cases) + " " + fmt_double("worst_err/tol", worst) +
                                         " tol=1", worst <= 1.0);
}

void test_lora_layout(const std::string& name, const fs::QwenConfig& c, const fs::LoraConfig& lora) {
  const gpuaccept::fsdp::LoraLayout layout(c, lora);
  bool ok = layout.parameters() == fs::lora_parameter_count(c, lora) && layout.total() % fs::kTensorAlignElems == 0;
  std::size_t end = 0;
  for (const gpuaccept::fsdp::LoraSlot& s : layout.slots()) {
    ok = ok && s.a_offset % fs::kTensorAlignElems == 0 && s.b_offset % fs::kTensorAlignElems == 0;
    ok = ok && s.a_offset >= end && s.b_offset >= s.a_offset + static_cast<std::size_t>(lora.rank) * s.in;
    end = s.b_offset + static_cast<std::size_t>(s.out) * lora.rank;
    ok = ok && layout.find(s.layer, s.target) == &s;
  }
  ok = ok && end <= layout.total();
  const fs::LoraWeights w = fs::init_lora(c, lora, 5, false);
  const std::vector<float> flat = layout.flatten(w);
  const fs::LoraWeights back = layout.unflatten(flat);
  double worst = 0;
  for (std::size_t l = 0; l < w.layers.size(); ++l)
    for (std::size_t j = 0; j < w.layers[l].size(); ++j) {
      for (std::size_t i = 0; i < w.layers[l][j].A.size(); ++i)
        worst = std::max(worst, std::abs(back.layers[l][j].A[i] - static_cast<float>(w.layers[l][j].A[i])));
      for (std::size_t i = 0; i < w.layers[l][j].B.size(); ++i)
        worst = std::max(worst, std::abs(back.layers[l][j].B[i] - static_cast<float>(w.layers[l][j].B[i])));
    }
  check_line("lora_layout", name,
             "params=" + std::to_string(layout.parameters()) + " total=" + std::to_string(layout.total()) + " " +
                 fmt_double("round_trip_err", worst) + " tol=0",
             ok && worst == 0);
}

// ---- the model against the reference -----------------------------------------------------

struct Case {
  std::string name;
  fs::QwenConfig config;
  fs::LoraConfig lora;
  int B, T;
  double loss_tol, grad_tol;
  bool naive = false;          // every matmul on naive_gemm
  int logits_chunk = 1024;     // < B*T: the head's chunk loop runs several times
  bool weight_source = false;  // weights through a WeightSource that checks the order of use
};

struct Reference {
  double loss = 0, loss_eval = 0;
  fs::LoraWeights grads;
  std::vector<double> d_embedded;
};

struct Inputs {
  fs::QwenBaseWeights base;
  fs::LoraWeights adapters;
  std::vector<int> tokens, targets;
  fs::DropoutMasks masks;
};

constexpr std::uint64_t kSeed = 1234, kStep = 7;

Inputs make_inputs(const Case& k) {
  Inputs in;
  in.base = fs::init_base(k.config, 11);
  round_base(in.base);
  in.adapters = fs::init_lora(k.config, k.lora, 12, /*b_zero=*/false);
  round_lora(in.adapters);
  Rng rng{13};
  const std::size_t N = static_cast<std::size_t>(k.B) * static_cast<std::size_t>(k.T);
  for (std::size_t i = 0; i < N; ++i) {
    in.tokens.push_back(rng.below(k.config.vocab));
    in.targets.push_back(rng.below(k.config.vocab));
  }
  if (k.lora.dropout > 0) in.masks = replay_masks(k.config, k.lora, k.B, k.T, kSeed, kStep);
  return in;
}

Reference run_reference(const Case& k, const Inputs& in) {
  Reference r;
  fs::ReferenceExtras extras;
  extras.d_embedded = &r.d_embedded;
  const fs::DropoutMasks* masks = k.lora.dropout > 0 ? &in.masks : nullptr;
  r.loss = fs::qwen_lora_forward_backward(k.config, in.base, k.lora, in.adapters, in.tokens, in.targets, k.B, k.T,
                                          masks, &r.grads, extras);
  r.loss_eval = masks ? fs::qwen_lora_forward_backward(k.config, in.base, k.lora, in.adapters, in.tokens, in.targets,
                                                       k.B, k.T, nullptr, nullptr)
                      : r.loss;
  return r;
}

// Hands out resident weights as FSDP's gatherer would, and checks the calls against the
// order qwen_model.h promises: every acquire released before the next, in sequence.
class RecordingSource final : public kg::WeightSource {
 public:
  RecordingSource(const bf16* embed, const bf16* head, const bf16* layers, std::size_t layer_numel)
      : embed_(embed), head_(head), layers_(layers), layer_numel_(layer_numel) {}
  const bf16* acquire(kg::WeightKind kind, int layer, cudaStream_t) override {
    if (held_) ok_ = false;  // the previous one was not released
    held_ = true;
    log_ += name(kind, layer) + " ";
    if (kind == kg::WeightKind::embedding) return embed_;
    if (kind == kg::WeightKind::head) return head_;
    return layers_ + static_cast<std::size_t>(layer) * layer_numel_;
  }
  void release(kg::WeightKind, int, cudaStream_t) override {
    if (!held_) ok_ = false;
    held_ = false;
  }
  // The log since the last call, and whether acquire and release alternated.
  std::string take(bool& ok) {
    ok = ok_ && !held_;
    ok_ = true;
    std::string out = log_;
    log_.clear();
    return out;
  }
  static std::string name(kg::WeightKind kind, int layer) {
    return kind == kg::WeightKind::embedding ? "E" : kind == kg::WeightKind::head ? "H" : "L" + std::to_string(layer);
  }

 private:
  const bf16 *embed_, *head_, *layers_;
  std::size_t layer_numel_;
  std::string log_;
  bool held_ = false, ok_ = true;
};

template <typename T>
DeviceBuffer<T> upload(const std::vector<T>& host) {
  DeviceBuffer<T> d(host.size());
  GPUACCEPT_CUDA_CHECK(cudaMemcpy(d.get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

void run_gpu(const Case& k, const Inputs& in, const Reference& ref) {
  const fs::QwenConfig& c = k.config;
  const std::size_t N = static_cast<std::size_t>(k.B) * static_cast<std::size_t>(k.T);
  gpuaccept::CudaStream stream;
  const GpuLayoutBase host = to_gpu_layout(c, in.base);
  const DeviceBuffer<bf16> layers = upload(host.layers), embed = upload(host.embed), head = upload(host.head),
                           final_norm = upload(host.final_norm);
  const std::size_t layer_numel = fs::make_layer_layout(c).numel;

  kg::ModelOptions options;
  options.naive_gemm = k.naive;
  options.logits_chunk = k.logits_chunk;
  kg::QwenLoraModel model(c, k.lora, k.B, k.T, options);
  RecordingSource source(embed.get(), head.get(), layers.get(), layer_numel);
  if (k.weight_source) {
    model.set_weight_source(&source);
  } else {
    for (int l = 0; l < c.layers; ++l)
      model.set_layer_weights(l, layers.get() + static_cast<std::size_t>(l) * layer_numel);
    model.set_embedding(embed.get());
    model.set_head(head.get());
  }
  model.set_final_norm(final_norm.get());
  // The order of use qwen_model.h documents, for forward_backward and forward_only.
  std::string forward_order = "E ", backward_order;
  for (int l = 0; l < c.layers; ++l) forward_order += "L" + std::to_string(l) + " ";
  forward_order += "H ";
  for (int l = c.layers - 1; l >= 0; --l) backward_order += "L" + std::to_string(l) + " ";
  model.upload_lora(model.lora_layout().flatten(in.adapters), stream);
  model.zero_lora_grads(stream);

  const float loss = model.forward_backward(in.tokens, in.targets, kStep, kSeed, stream);
  if (k.weight_source) {
    bool ok = false;
    const std::string order = source.take(ok);
    check_line("weight_order", k.name + " forward_backward", "calls=\"" + order + "\"",
               ok && order == forward_order + backward_order);
  }
  const std::vector<float> flat = model.download_lora_grads(stream);
  std::vector<float> d_emb_f(N * static_cast<std::size_t>(c.hidden));
  GPUACCEPT_CUDA_CHECK(cudaMemcpy(d_emb_f.data(), model.embedded_grad(), d_emb_f.size() * sizeof(float),
                                  cudaMemcpyDeviceToHost));
  std::printf("model info %s attention=%s naive_gemm_calls=%lld device_MiB=%.1f\n", k.name.c_str(),
              model.attention_name(), model.naive_gemm_calls(), static_cast<double>(model.device_bytes()) / (1 << 20));

  const double loss_err = std::abs(static_cast<double>(loss) - ref.loss);
  check_line("loss", k.name,
             fmt_double("gpu", loss) + " " + fmt_double("cpu", ref.loss) + " " + fmt_double("err", loss_err) + " " +
                 fmt_double("tol", k.loss_tol),
             std::isfinite(loss) && loss_err <= k.loss_tol);

  const fs::LoraWeights grads = model.lora_layout().unflatten(flat);
  for (std::size_t l = 0; l < grads.layers.size(); ++l)
    for (std::size_t j = 0; j < k.lora.targets.size(); ++j)
      for (int which = 0; which < 2; ++which) {
        const std::vector<double>& got = which ? grads.layers[l][j].B : grads.layers[l][j].A;
        const std::vector<double>& want = which ? ref.grads.layers[l][j].B : ref.grads.layers[l][j].A;
        const double err = rel_l2(got, want);
        check_line("grad", k.name + " layers." + std::to_string(l) + "." + fs::projection_name(k.lora.targets[j]) +
                               (which ? ".B" : ".A"),
                   fmt_double("rel_l2", err) + " " + fmt_double("tol", k.grad_tol), err <= k.grad_tol);
      }
  const double emb_err = rel_l2(std::vector<double>(d_emb_f.begin(), d_emb_f.end()), ref.d_embedded);
  check_line("d_embedded", k.name, fmt_double("rel_l2", emb_err) + " " + fmt_double("tol", k.grad_tol),
             emb_err <= k.grad_tol);

  // Gradients accumulate: a second pass over the same micro-batch (same masks) doubles them.
  const float loss2 = model.forward_backward(in.tokens, in.targets, kStep, kSeed, stream);
  const std::vector<float> flat2 = model.download_lora_grads(stream);
  double num = 0, den = 0;
  for (std::size_t i = 0; i < flat.size(); ++i) {
    num += (static_cast<double>(flat2[i]) - 2.0 * flat[i]) * (static_cast<double>(flat2[i]) - 2.0 * flat[i]);
    den += 4.0 * static_cast<double>(flat[i]) * flat[i];
  }
  const double acc_err = den > 0 ? std::sqrt(num / den) : INFINITY;
  const double loss_diff = std::abs(static_cast<double>(loss2) - loss);
  check_line("accumulate", k.name,
             fmt_double("loss_diff", loss_diff) + " " + fmt_double("grad_rel_l2_vs_2x", acc_err) + " tol=1e-05,1e-03",
             loss_diff <= 1e-5 && acc_err <= 1e-3);

  // Evaluation: no dropout, no backward.
  bool ok_unused = false;
  (void)source.take(ok_unused);
  const float loss_eval = model.forward_only(in.tokens, in.targets, stream);
  if (k.weight_source) {
    bool ok = false;
    const std::string order = source.take(ok);
    check_line("weight_order", k.name + " forward_only", "calls=\"" + order + "\"", ok && order == forward_order);
  }
  const double eval_err = std::abs(static_cast<double>(loss_eval) - ref.loss_eval);
  check_line("forward_only", k.name,
             fmt_double("gpu", loss_eval) + " " + fmt_double("cpu", ref.loss_eval) + " " + fmt_double("err", eval_err) +
                 " " + fmt_double("tol", k.loss_tol),
             std::isfinite(loss_eval) && eval_err <= k.loss_tol);

  // Recompute off (every layer's activations kept from forward): the same bits as with it, since
  // the recompute repeats forward's kernels on the same inputs. Both models with fixed matmul
  // algorithms (autotuning may pick others per model), the one without through the weight order
  // check too; and within tolerance of the reference like every case.
  auto fixed_pass = [&](bool recompute, std::string* order,
                        gpuaccept::fsdp::RecomputeKeep keep = gpuaccept::fsdp::RecomputeKeep::attention) {
    kg::ModelOptions o = options;
    o.matmul_autotune = false;
    o.recompute = recompute;
    o.recompute_keep = keep;
    kg::QwenLoraModel m(c, k.lora, k.B, k.T, o);
    if (k.weight_source) {
      m.set_weight_source(&source);
    } else {
      for (int l = 0; l < c.layers; ++l) m.set_layer_weights(l, layers.get() + static_cast<std::size_t>(l) * layer_numel);
      m.set_embedding(embed.get());
      m.set_head(head.get());
    }
    m.set_final_norm(final_norm.get());
    m.upload_lora(m.lora_layout().flatten(in.adapters), stream);
    m.zero_lora_grads(stream);
    bool unused = false;
    (void)source.take(unused);
    const float l = m.forward_backward(in.tokens, in.targets, kStep, kSeed, stream);
    if (order) {
      bool ok = false;
      *order = source.take(ok);
      if (!ok) *order += " (acquire and release did not alternate)";
    }
    if (!recompute)
      std::printf("model info %s recompute=off device_MiB=%.1f\n", k.name.c_str(),
                  static_cast<double>(m.device_bytes()) / (1 << 20));
    return std::pair{l, m.download_lora_grads(stream)};
  };
  std::string order_off;
  const auto [loss_on, grads_on] = fixed_pass(true, nullptr);
  const auto [loss_off, grads_off] = fixed_pass(false, &order_off);
  std::size_t differing = 0;
  for (std::size_t i = 0; i < grads_on.size(); ++i)
    differing += std::memcmp(&grads_on[i], &grads_off[i], sizeof(float)) != 0;
  const bool same_loss = std::memcmp(&loss_on, &loss_off, sizeof(float)) == 0;
  const double off_err = std::abs(static_cast<double>(loss_off) - ref.loss);
  check_line("recompute_off", k.name,
             fmt_double("loss_on", loss_on) + " " + fmt_double("loss_off", loss_off) + " same_loss_bits=" +
                 (same_loss ? "yes" : "no") + " grads_differing=" + std::to_string(differing) + "/" +
                 std::to_string(grads_on.size()) + " " + fmt_double("err_vs_cpu", off_err),
             same_loss && differing == 0 && off_err <= k.loss_tol);
  if (k.weight_source)
    check_line("weight_order", k.name + " recompute_off", "calls=\"" + order_off + "\"",
               order_off == forward_order + backward_order);

  // The recompute keeping less (the input only: the attention recomputed too) or more (the whole
  // attention block: only the MLP block recomputed) than the default: the same bits again (every
  // kernel is deterministic, and what is kept is what would be recomputed).
  for (const auto keep : {gpuaccept::fsdp::RecomputeKeep::input, gpuaccept::fsdp::RecomputeKeep::attention_block}) {
    const auto [loss_k, grads_k] = fixed_pass(true, nullptr, keep);
    std::size_t differing_k = 0;
    for (std::size_t i = 0; i < grads_on.size(); ++i)
      differing_k += std::memcmp(&grads_on[i], &grads_k[i], sizeof(float)) != 0;
    const bool same_loss_k = std::memcmp(&loss_on, &loss_k, sizeof(float)) == 0;
    check_line("recompute_keep", k.name + " " + gpuaccept::fsdp::recompute_keep_name(keep),
               fmt_double("loss_attention", loss_on) + " " + fmt_double("loss", loss_k) + " same_loss_bits=" +
                   (same_loss_k ? "yes" : "no") + " grads_differing=" + std::to_string(differing_k) + "/" +
                   std::to_string(grads_on.size()),
               same_loss_k && differing_k == 0);
  }
}

// ---- attention: FlashAttention and GemmAttention against a float64 loop ------------------

// attention_reference, AttentionGrads: attention_reference.h (shared with flash-attention-tests).

std::vector<double> download_bf16(const DeviceBuffer<bf16>& d) {
  std::vector<bf16> h(d.size());
  GPUACCEPT_CUDA_CHECK(cudaMemcpy(h.data(), d.get(), h.size() * sizeof(bf16), cudaMemcpyDeviceToHost));
  std::vector<double> out(h.size());
  for (std::size_t i = 0; i < h.size(); ++i) out[i] = __bfloat162float(h[i]);
  return out;
}

std::vector<double> random_bf16_values(std::size_t n, double half_width, Rng& rng) {
  std::vector<double> v(n);
  for (double& x : v) x = round_bf16(rng.uniform(-half_width, half_width));
  return v;
}

// One implementation's y, dq, dk, dv on the given inputs (device buffers), downloaded.
AttentionGrads run_attention(kg::Attention& attn, const DeviceBuffer<bf16>& q, const DeviceBuffer<bf16>& k,
                             const DeviceBuffer<bf16>& v, const DeviceBuffer<bf16>& dy, cudaStream_t s) {
  kg::Gemm gemm(false, false);
  DeviceBuffer<bf16> y(q.size()), dq(q.size()), dk(k.size()), dv(v.size());
  attn.forward(0, y.get(), q.get(), k.get(), v.get(), gemm, s);
  attn.backward(0, dq.get(), dk.get(), dv.get(), dy.get(), gemm, s);
  GPUACCEPT_CUDA_CHECK(cudaStreamSynchronize(s));
  return {download_bf16(y), download_bf16(dq), download_bf16(dk), download_bf16(dv)};
}

// Lines "model attention <impl> <shape> <output> rel_l2=... tol=... PASS|FAIL" for y, dq, dk,
// dv of FlashAttention (where it applies) and GemmAttention against the float64 loop, and
// "model attention_deterministic" (two flash backward passes give the same bits).
void test_attention(int B, int T, int NH, int NKV, int HD) {
  const std::string shape = "B" + std::to_string(B) + "_T" + std::to_string(T) + "_NH" + std::to_string(NH) + "_NKV" +
                            std::to_string(NKV) + "_HD" + std::to_string(HD);
  Rng rng{static_cast<std::uint64_t>(1000 + T + NH)};
  const std::size_t nq = static_cast<std::size_t>(B) * T * NH * HD, nkv = static_cast<std::size_t>(B) * T * NKV * HD;
  // q wider than k: scores of std ~1.3 after the 1/sqrt(HD), a softmax far from flat
  const std::vector<double> q = random_bf16_values(nq, 2.0, rng), k = random_bf16_values(nkv, 1.0, rng),
                            v = random_bf16_values(nkv, 1.0, rng), dy = random_bf16_values(nq, 1.0, rng);
  const AttentionGrads want = attention_reference(q, k, v, dy, B, T, NH, NKV, HD);
  const DeviceBuffer<bf16> dq_in = upload(to_bf16(q)), dk_in = upload(to_bf16(k)), dv_in = upload(to_bf16(v)),
                           ddy = upload(to_bf16(dy));
  gpuaccept::CudaStream stream;
  std::vector<std::unique_ptr<kg::Attention>> impls;
  impls.push_back(std::make_unique<kg::GemmAttention>(B, T, NH, NKV, HD));
  if (kg::flash_attention_supported(T, NH, NKV, HD)) {
    for (int variant = 0; variant < kg::kFlashBackwardVariants; ++variant)
      if (kg::flash_backward_variant_available(variant))
        impls.push_back(std::make_unique<kg::FlashAttention>(B, T, NH, NKV, HD, /*slots=*/1, variant, /*fwd=*/0));
    // The other forward variants with the default backward (variant 1 needs T % 128 == 0).
    for (int fwd = 1; fwd < kg::kFlashForwardVariants; ++fwd)
      if (kg::flash_forward_variant_available(fwd))
        impls.push_back(std::make_unique<kg::FlashAttention>(B, T, NH, NKV, HD, /*slots=*/1,
                                                             kg::flash_backward_default_variant(), fwd));
  }
  // bf16 outputs: one rounding (2^-9 relative) plus fp32 sums and bf16 P/dS in the products
  constexpr double kTolY = 1e-2, kTolGrad = 2e-2;
  for (const auto& impl : impls) {
    const auto* flash = dynamic_cast<const kg::FlashAttention*>(impl.get());
    const std::string label = flash ? "flash fwd_variant=" + std::to_string(flash->forward_variant()) +
                                          " bwd_variant=" + std::to_string(flash->backward_variant())
                                    : std::string(impl->name());
    const AttentionGrads got = run_attention(*impl, dq_in, dk_in, dv_in, ddy, stream);
    const std::pair<const char*, std::pair<const std::vector<double>*, const std::vector<double>*>> outs[] = {
        {"y", {&got.y, &want.y}}, {"dq", {&got.dq, &want.dq}}, {"dk", {&got.dk, &want.dk}}, {"dv", {&got.dv, &want.dv}}};
    for (const auto& [what, pair] : outs) {
      const double err = rel_l2(*pair.first, *pair.second);
      const double tol = std::string(what) == "y" ? kTolY : kTolGrad;
      check_line("attention", label + " " + shape + " " + what,
                 fmt_double("rel_l2", err) + " " + fmt_double("tol", tol), err <= tol);
    }
    if (flash) {  // three more passes: every one the same bits
      bool same = true;
      for (int again_i = 0; again_i < 3; ++again_i) {
        const AttentionGrads again = run_attention(*impl, dq_in, dk_in, dv_in, ddy, stream);
        same = same && again.y == got.y && again.dq == got.dq && again.dk == got.dk && again.dv == got.dv;
      }
      check_line("attention_deterministic", label + " " + shape, same ? "bitwise_equal=1" : "bitwise_equal=0", same);
    }
  }

  // Slots (the model without recompute keeps one per layer): forward slot 0 on these inputs,
  // then slot 1 on others, then backward of slot 0 must give the one-slot result's bits (the
  // GEMM version runs slot 0's forward again; flash keeps each slot's log-sum-exp).
  const DeviceBuffer<bf16> other_q = upload(to_bf16(random_bf16_values(nq, 2.0, rng))),
                           other_k = upload(to_bf16(random_bf16_values(nkv, 1.0, rng))),
                           other_v = upload(to_bf16(random_bf16_values(nkv, 1.0, rng)));
  std::vector<std::unique_ptr<kg::Attention>> two_slots;
  two_slots.push_back(std::make_unique<kg::GemmAttention>(B, T, NH, NKV, HD, /*slots=*/2));
  if (kg::flash_attention_supported(T, NH, NKV, HD))
    two_slots.push_back(std::make_unique<kg::FlashAttention>(B, T, NH, NKV, HD, /*slots=*/2));
  for (const auto& impl : two_slots) {
    const AttentionGrads one_slot = run_attention(*impl, dq_in, dk_in, dv_in, ddy, stream);
    kg::Gemm gemm(false, false);
    DeviceBuffer<bf16> y(nq), other_y(nq), dq(nq), dk(nkv), dv(nkv);
    impl->forward(0, y.get(), dq_in.get(), dk_in.get(), dv_in.get(), gemm, stream);
    impl->forward(1, other_y.get(), other_q.get(), other_k.get(), other_v.get(), gemm, stream);
    impl->backward(0, dq.get(), dk.get(), dv.get(), ddy.get(), gemm, stream);
    GPUACCEPT_CUDA_CHECK(cudaStreamSynchronize(stream));
    const bool same = download_bf16(y) == one_slot.y && download_bf16(dq) == one_slot.dq &&
                      download_bf16(dk) == one_slot.dk && download_bf16(dv) == one_slot.dv;
    check_line("attention_slots", std::string(impl->name()) + " " + shape,
               same ? "slot0_after_slot1_bitwise_equal=1" : "slot0_after_slot1_bitwise_equal=0", same);
  }
}

// "model info attention_timing ..." (not a check): forward and backward ms of each
// implementation at the phase's shape, cudaEvent timing, best and mean of `reps` after a warm-up.
void time_attention(int B, int T, int NH, int NKV, int HD, int reps) {
  const std::size_t nq = static_cast<std::size_t>(B) * T * NH * HD, nkv = static_cast<std::size_t>(B) * T * NKV * HD;
  Rng rng{99};
  const DeviceBuffer<bf16> q = upload(to_bf16(random_bf16_values(nq, 2.0, rng))),
                           k = upload(to_bf16(random_bf16_values(nkv, 1.0, rng))),
                           v = upload(to_bf16(random_bf16_values(nkv, 1.0, rng))),
                           dy = upload(to_bf16(random_bf16_values(nq, 1.0, rng)));
  DeviceBuffer<bf16> y(nq), dq(nq), dk(nkv), dv(nkv);
  gpuaccept::CudaStream stream;
  kg::Gemm gemm(false, false);
  // causal FLOPs: 2 products of 2 T^2/2 HD per head forward, 5 backward (incl. recompute of P)
  const double flop_fwd = 2.0 * 2.0 * B * NH * (static_cast<double>(T) * T / 2) * HD;
  const double flop_bwd = 2.5 * flop_fwd;
  std::vector<std::unique_ptr<kg::Attention>> impls;
  impls.push_back(std::make_unique<kg::GemmAttention>(B, T, NH, NKV, HD));
  if (kg::flash_attention_supported(T, NH, NKV, HD)) {
    for (int variant = 0; variant < kg::kFlashBackwardVariants; ++variant)
      if (kg::flash_backward_variant_available(variant))
        impls.push_back(std::make_unique<kg::FlashAttention>(B, T, NH, NKV, HD, /*slots=*/1, variant, /*fwd=*/0));
    for (int fwd = 1; fwd < kg::kFlashForwardVariants; ++fwd)
      if (kg::flash_forward_variant_available(fwd))
        impls.push_back(std::make_unique<kg::FlashAttention>(B, T, NH, NKV, HD, /*slots=*/1,
                                                             kg::flash_backward_default_variant(), fwd));
  }
  std::vector<double> variant0[4];  // flash variant 0's (forward and backward) y, dq, dk, dv
  for (const auto& impl : impls) {
    const auto* flash = dynamic_cast<const kg::FlashAttention*>(impl.get());
    std::string label = impl->name(), kernels;
    if (flash) {
      label += " fwd_variant=" + std::to_string(flash->forward_variant()) +
               " bwd_variant=" + std::to_string(flash->backward_variant());
      kg::FlashKernelResources res[3];
      const int n = kg::flash_kernel_resources(HD, flash->backward_variant(), res, flash->forward_variant());
      for (int i = 0; i < n; ++i)
        kernels += " " + std::string(res[i].name) + "{threads=" + std::to_string(res[i].threads) +
                   " regs=" + std::to_string(res[i].regs) + " local=" + std::to_string(res[i].local_bytes) +
                   " static_smem=" + std::to_string(res[i].static_smem) +
                   " dyn_smem=" + std::to_string(res[i].dynamic_smem) +
                   " max_dyn_smem=" + std::to_string(res[i].max_dynamic_smem) +
                   " blocks_per_sm=" + std::to_string(res[i].blocks_per_sm) + "}";
    }
    gpuaccept::CudaEvent e0, e1, e2;
    double fwd_best = 1e30, bwd_best = 1e30, fwd_sum = 0, bwd_sum = 0;
    for (int rep = -1; rep < reps; ++rep) {  // rep -1: warm-up
      e0.record(stream);
      impl->forward(0, y.get(), q.get(), k.get(), v.get(), gemm, stream);
      e1.record(stream);
      impl->backward(0, dq.get(), dk.get(), dv.get(), dy.get(), gemm, stream);
      e2.record(stream);
      const double f = e1.elapsed_ms_since(e0), b = e2.elapsed_ms_since(e1);
      if (rep < 0) continue;
      fwd_best = std::min(fwd_best, f), bwd_best = std::min(bwd_best, b), fwd_sum += f, bwd_sum += b;
    }
    std::printf("model info attention_timing %s B=%d T=%d NH=%d NKV=%d HD=%d forward_ms=%.3f (mean %.3f, %.0f TFLOP/s) "
                "backward_ms=%.3f (mean %.3f, %.0f TFLOP/s) reps=%d device_MiB=%.1f%s\n",
                label.c_str(), B, T, NH, NKV, HD, fwd_best, fwd_sum / reps, flop_fwd / fwd_best * 1e-9, bwd_best,
                bwd_sum / reps, flop_bwd / bwd_best * 1e-9, reps, static_cast<double>(impl->device_bytes()) / (1 << 20),
                kernels.c_str());
    std::fflush(stdout);
    if (flash) {
      // At this size (64 key blocks, more CTAs than fit at once) each variant against variant 0
      // (rel L2: only the order of the fp32 sums and where bf16 rounds differ) and against itself.
      GPUACCEPT_CUDA_CHECK(cudaStreamSynchronize(stream));
      const std::vector<double> got[4] = {download_bf16(y), download_bf16(dq), download_bf16(dk), download_bf16(dv)};
      impl->forward(0, y.get(), q.get(), k.get(), v.get(), gemm, stream);
      impl->backward(0, dq.get(), dk.get(), dv.get(), dy.get(), gemm, stream);
      GPUACCEPT_CUDA_CHECK(cudaStreamSynchronize(stream));
      const bool same = download_bf16(y) == got[0] && download_bf16(dq) == got[1] && download_bf16(dk) == got[2] &&
                        download_bf16(dv) == got[3];
      const std::string shape = "B" + std::to_string(B) + "_T" + std::to_string(T) + "_NH" + std::to_string(NH) +
                                "_NKV" + std::to_string(NKV) + "_HD" + std::to_string(HD);
      check_line("attention_deterministic", label + " " + shape, same ? "bitwise_equal=1" : "bitwise_equal=0", same);
      if (flash->backward_variant() == 0 && flash->forward_variant() == 0) {
        for (int i = 0; i < 4; ++i) variant0[i] = got[i];
      } else if (!variant0[0].empty()) {
        const char* names[4] = {"y", "dq", "dk", "dv"};
        constexpr double kTolAgree = 1e-2;
        for (int i = 0; i < 4; ++i) {
          const double err = rel_l2(got[i], variant0[i]);
          check_line("attention_variants_agree", label + " " + shape + " " + names[i],
                     fmt_double("rel_l2_vs_variant0", err) + " " + fmt_double("tol", kTolAgree), err <= kTolAgree);
        }
      }
    }
  }
}

fs::LoraConfig mid_all_p0(fs::LoraConfig l) {
  l.dropout = 0;
  return l;
}

std::vector<Case> cases() {
  fs::LoraConfig tiny_lora;
  tiny_lora.rank = 2;
  tiny_lora.alpha = 4;  // scale 2
  tiny_lora.targets = fs::lora_targets_by_name("all");
  tiny_lora.dropout = 0;
  fs::LoraConfig tiny_drop = tiny_lora;
  tiny_drop.dropout = 0.25;

  const fs::QwenConfig mid{1000, 256, 2, 4, 2, 64, 512, 128, 1e-6, 1e6};
  // Qwen2's head size: the model's attention is FlashAttention here (GemmAttention above)
  const fs::QwenConfig mid128{1000, 512, 2, 4, 2, 128, 512, 192, 1e-6, 1e6};
  fs::LoraConfig mid_lora;
  mid_lora.rank = 8;
  mid_lora.alpha = 16;  // scale 2
  mid_lora.targets = fs::lora_targets_by_name("qkvo");
  mid_lora.dropout = 0;
  fs::LoraConfig mid_drop = mid_lora;
  mid_drop.dropout = 0.1;
  fs::LoraConfig mid_all = mid_drop;
  mid_all.targets = fs::lora_targets_by_name("all");

  // Loss tolerances: tiny's logits are ~0.1, where bf16 activations move the loss by ~1e-4;
  // the mid shape's 0.02 nats is the phase's bound. Gradients: 0.05 relative L2, as ddp's check.
  return {
      {"tiny-all-p0", fs::qwen_tiny, tiny_lora, 2, 16, 2e-3, 0.05, false, 1024, true},
      {"tiny-all-p0.25", fs::qwen_tiny, tiny_drop, 2, 16, 2e-3, 0.05},
      {"tiny-all-p0.25-naive", fs::qwen_tiny, tiny_drop, 2, 16, 2e-3, 0.05, true},
      {"mid-qkvo-p0", mid, mid_lora, 2, 128, 0.02, 0.05},
      {"mid-qkvo-p0.1", mid, mid_drop, 2, 128, 0.02, 0.05},
      {"mid-all-p0.1", mid, mid_all, 2, 128, 0.02, 0.05, false, 96, true},  // 3 chunks of logits
      {"mid-qkvo-p0.1-naive", mid, mid_drop, 2, 128, 0.02, 0.05, true},
      {"mid128-qkvo-p0.1", mid128, mid_drop, 2, 192, 0.02, 0.05},
      {"mid128-all-p0", mid128, mid_all_p0(mid_all), 2, 128, 0.02, 0.05, false, 1024, true},
  };
}

}  // namespace

int main(int argc, char** argv) {
  const bool cpu_only = argc > 1 && std::string(argv[1]) == "--cpu-only";
  const auto t0 = std::chrono::steady_clock::now();
  if (!cpu_only) {
    int device = 0;
    cudaDeviceProp prop{};
    if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
      std::printf("fsdp-model-tests: no CUDA device (--cpu-only runs the host checks)\n");
      return 1;
    }
    std::printf("fsdp-model-tests on %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);
  } else {
    std::printf("fsdp-model-tests --cpu-only\n");
  }

  guarded("gemm_mapping", "host", test_gemm_mapping);
  for (const Case& k : cases()) {
    if (k.naive) continue;
    guarded("lora_layout", k.name, [&] { test_lora_layout(k.name, k.config, k.lora); });
  }

  for (const Case& k : cases()) {
    Inputs in;
    Reference ref;
    bool have_reference = false;
    guarded("cpu_reference", k.name, [&] {
      const auto r0 = std::chrono::steady_clock::now();
      in = make_inputs(k);
      ref = run_reference(k, in);
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - r0).count();
      have_reference = std::isfinite(ref.loss) && std::isfinite(ref.loss_eval);
      if (cpu_only || !have_reference)
        check_line("cpu_reference", k.name,
                   fmt_double("loss", ref.loss) + " " + fmt_double("loss_eval", ref.loss_eval) + " " +
                       fmt_double("seconds", secs),
                   have_reference);
    });
    if (!have_reference || cpu_only) continue;
    guarded("gpu", k.name, [&] { run_gpu(k, in, ref); });
  }

  if (!cpu_only) {
    // The attention tests below skip the variants this build and GPU cannot run; on an H100 or
    // H200 the wgmma ones must be among those run (a build that lost sm_90a would otherwise pass
    // without them).
    guarded("attention", "wgmma_variants", [&] {
      cudaDeviceProp prop{};
      GPUACCEPT_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
      const bool hopper = prop.major == 9 && prop.minor == 0;
      const bool available = kg::flash_forward_variant_available(2) && kg::flash_backward_variant_available(3);
      check_line("attention_wgmma_variants", prop.name,
                 std::string("compute=") + std::to_string(prop.major) + "." + std::to_string(prop.minor) +
                     " available=" + (available ? "1" : "0"),
                 available == hopper);
    });
    // Attention alone: T not a multiple of 128 (192), GQA groups of 2 and of 7 (Qwen2-7B's 28/4)
    for (const auto& [B, T, NH, NKV] : {std::array<int, 4>{2, 64, 4, 2}, std::array<int, 4>{2, 192, 4, 2},
                                        std::array<int, 4>{1, 128, 28, 4}, std::array<int, 4>{2, 256, 4, 4},
                                        std::array<int, 4>{1, 1024, 8, 2}})
      guarded("attention", "B" + std::to_string(B) + "_T" + std::to_string(T), [&] { test_attention(B, T, NH, NKV, 128); });
    guarded("attention", "HD64", [&] { test_attention(2, 128, 4, 2, 64); });  // the flash kernels' other head size
    guarded("attention_timing", "qwen2-7b", [&] { time_attention(2, 4096, 28, 4, 128, 5); });
  }

  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("fsdp-model-tests: %s (%d failed, %.1f s)\n", g_failures == 0 ? "PASS" : "FAIL", g_failures, secs);
  return g_failures == 0 ? 0 : 1;
}
