// The float64 CPU reference of Qwen2 with LoRA adapters: forward, loss and backward to every
// adapter's A and B, written for clarity, not speed. It is the ground truth the GPU
// implementation's loss and LoRA gradients are compared against; its own gradients are checked
// by finite differences (tests/unit/fsdp_lora/test_cpu_reference.cpp).
//
// The model is Hugging Face's Qwen2 (modeling_qwen2.py), with an untied head:
//   h = embed[tokens]                                                    (B, T, C)
//   per layer:  x = rmsnorm(h) * w_in
//               q = rope(x Wq^T + bq),  k = rope(x Wk^T + bk),  v = x Wv^T + bv
//               h = h + attention(q, k, v) Wo^T          (causal, grouped-query, 1/sqrt(HD))
//               x2 = rmsnorm(h) * w_post
//               h = h + (silu(x2 Wg^T) * (x2 Wu^T)) Wd^T
//   logits = (rmsnorm(h) * w_final) Whead^T,  loss = mean cross-entropy over the B*T positions
// rmsnorm(x) = x / sqrt(mean(x^2) + eps). RoPE is rotate_half's: the pair (i, i + HD/2) of each
// head turns by t * theta^(-2i/HD) at position t.
// A LoRA adapter on projection P (weight W (out, in), bias b when P has one) adds
//   y = x W^T (+ b) + (alpha / r) * ((mask * x) A^T) B^T,   A (r, in), B (out, r)
// where mask is the dropout on the adapter's input only (PEFT's), replayed from an explicit
// DropoutMasks so a GPU's random draw can be reproduced; without masks there is no dropout.
// The base is frozen: backward computes no base-weight gradients, only the activation
// gradients on every path (the LoRA branches' included) and from them d(loss)/dA, d(loss)/dB.
// Checked once against transformers 5.17's Qwen2ForCausalLM with PEFT 0.21 LoRA on all seven
// projections, in float64 with the same masks: loss, logits and every gradient agreed to ~5e-15
// relative once HF's float32 steps (RMSNorm, RoPE's cos/sin, eager attention's softmax) were made
// float64; stock HF in float64 differs by ~1e-7 through them.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "fsdp-lora/qwen_config.h"

namespace gpuaccept::fsdp {

// One decoder layer's frozen weights, row-major, W as (out, in) as Hugging Face stores it.
// Sizes with Q = heads*head_dim, KV = kv_heads*head_dim, I = intermediate, C = hidden.
struct QwenLayerWeights {
  std::vector<double> w_in;    // (C)       input_layernorm.weight
  std::vector<double> wq, bq;  // (Q, C), (Q)    self_attn.q_proj
  std::vector<double> wk, bk;  // (KV, C), (KV)  self_attn.k_proj
  std::vector<double> wv, bv;  // (KV, C), (KV)  self_attn.v_proj
  std::vector<double> wo;      // (C, Q)    self_attn.o_proj (no bias)
  std::vector<double> w_post;  // (C)       post_attention_layernorm.weight
  std::vector<double> wg, wu;  // (I, C)    mlp.gate_proj, mlp.up_proj
  std::vector<double> wd;      // (C, I)    mlp.down_proj

  // The weight (out, in) and bias (out; empty for o, gate, up, down) of a projection.
  const std::vector<double>& weight(Projection p) const;
  std::vector<double>& weight(Projection p);
  const std::vector<double>& bias(Projection p) const;
  std::vector<double>& bias(Projection p);
};

struct QwenBaseWeights {
  std::vector<double> embed;  // (V, C)    model.embed_tokens.weight
  std::vector<QwenLayerWeights> layers;
  std::vector<double> w_final;  // (C)     model.norm.weight
  std::vector<double> head;     // (V, C)  lm_head.weight (untied)
};

struct LoraAdapter {
  std::vector<double> A;  // (r, in)    lora_A.weight
  std::vector<double> B;  // (out, r)   lora_B.weight
};
// layers[l][j] is the adapter on LoraConfig::targets[j] of layer l.
struct LoraWeights {
  std::vector<std::vector<LoraAdapter>> layers;
};

// layers[l][j] multiplies the input of the adapter on LoraConfig::targets[j] of layer l,
// (B, T, in) row-major: 0 where dropped, 1/(1-p) where kept (p = LoraConfig::dropout), as
// torch.nn.Dropout scales. An empty vector means no dropout on that adapter.
struct DropoutMasks {
  std::vector<std::vector<std::vector<double>>> layers;
};

// Optional outputs besides the loss and the LoRA gradients.
struct ReferenceExtras {
  std::vector<double>* logits = nullptr;      // (B, T, V), resized
  std::vector<double>* d_embedded = nullptr;  // d(loss)/d(embed[tokens]) (B, T, C), resized: the gradient
                                              // that comes out of the first layer, every path included
};

// tokens and targets are (B, T) row-major; targets[b,t] is the token that should follow
// tokens[b,0..t]. Returns the mean cross-entropy over the B*T positions, in nats. When grads is
// not null it is overwritten (resized to adapters' shape) with d(loss)/dA and d(loss)/dB of
// every adapter. masks may be null (no dropout). T is not limited by config.max_seq: RoPE
// needs no table.
// Throws std::invalid_argument with the reason on a config that does not validate, sizes that
// do not match the config, the LoRA config or B*T, token ids outside the vocabulary, or mask
// values other than 0 and 1/(1-p).
double qwen_lora_forward_backward(const QwenConfig& config, const QwenBaseWeights& base, const LoraConfig& lora,
                                  const LoraWeights& adapters, std::span<const int> tokens,
                                  std::span<const int> targets, int B, int T, const DropoutMasks* masks,
                                  LoraWeights* grads, const ReferenceExtras& extras = {});

// Deterministic for a seed on every platform (mt19937_64 and our own Box-Muller). Matrices and
// the embedding normal with std 0.02 (Hugging Face's initializer_range), RMSNorm weights 1, and
// the q/k/v biases normal with std 0.02 (Hugging Face initialises them to 0, but trained Qwen2
// biases are not, and a zero bias would leave its path untested).
QwenBaseWeights init_base(const QwenConfig& config, std::uint64_t seed);

// As PEFT: A kaiming-uniform with a = sqrt(5), i.e. U(-1/sqrt(in), 1/sqrt(in)); B zero when
// b_zero (PEFT's init, so the adapted model starts as the base), else normal with std 0.02
// (an adapter part-way through training, so that d(loss)/dA is not zero).
LoraWeights init_lora(const QwenConfig& config, const LoraConfig& lora, std::uint64_t seed, bool b_zero);

// Dropout masks as LoraConfig::dropout asks: each entry dropped (0) with probability p, else
// 1/(1-p); deterministic for a seed. p = 0 gives masks of all ones.
DropoutMasks random_dropout_masks(const QwenConfig& config, const LoraConfig& lora, int B, int T,
                                  std::uint64_t seed);

// RoPE on one head's vector x (head_dim values) at a position, rotate_half's convention: for
// i < head_dim/2, with a = position * theta^(-2i/head_dim),
//   x'[i] = x[i] cos a - x[i + head_dim/2] sin a,   x'[i + head_dim/2] = x[i + head_dim/2] cos a + x[i] sin a.
// inverse rotates by -a: the transpose, which is RoPE's backward. Exposed for the tests.
void rope_rotate(std::span<double> x, int position, double theta, bool inverse = false);

}  // namespace gpuaccept::fsdp
