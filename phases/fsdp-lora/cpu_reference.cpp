// Reads top to bottom: the ops, each forward beside its backward, then one decoder layer, then
// the model. Shapes: N = B*T rows, C = hidden, NH query heads and NKV key/value heads of HD
// channels (Q = NH*HD, KV = NKV*HD), I = intermediate, V = vocabulary, r = LoRA rank.
// Every backward *adds* into its gradient outputs (an activation read by several ops, like the
// normalised x that feeds q, k and v, sums their contributions); the caller zeroes them first.
// The base weights are frozen: no backward computes a gradient for them.
#include "fsdp-lora/cpu_reference.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numbers>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>

namespace gpuaccept::fsdp {

namespace {

using Vec = std::vector<double>;
using In = std::span<const double>;
using Out = std::span<double>;

struct Dims {
  std::size_t B, T, C, NH, NKV, HD, I, V;
  double eps, theta;
  std::size_t N() const { return B * T; }
  std::size_t Q() const { return NH * HD; }
  std::size_t KV() const { return NKV * HD; }
};

std::size_t index_of(Projection p) { return static_cast<std::size_t>(p); }
constexpr std::size_t kProjections = std::size(kAllProjections);

// --- embedding: h[n,:] = embed[tokens[n],:] ---------------------------------------------------
void embedding_forward(Out h, std::span<const int> tokens, In embed, std::size_t C) {
  for (std::size_t n = 0; n < tokens.size(); ++n)
    for (std::size_t c = 0; c < C; ++c) h[n * C + c] = embed[static_cast<std::size_t>(tokens[n]) * C + c];
}

// --- RMSNorm: y = w * x * rstd,  rstd = 1/sqrt(mean(x^2) + eps), per row of C ---------------
// (Qwen2RMSNorm: no mean subtraction, no bias.) rstd is kept for backward.
void rmsnorm_forward(Out y, Out rstd, In x, In w, std::size_t N, std::size_t C, double eps) {
  for (std::size_t n = 0; n < N; ++n) {
    double mean_sq = 0;
    for (std::size_t c = 0; c < C; ++c) mean_sq += x[n * C + c] * x[n * C + c];
    mean_sq /= static_cast<double>(C);
    rstd[n] = 1.0 / std::sqrt(mean_sq + eps);
    for (std::size_t c = 0; c < C; ++c) y[n * C + c] = w[c] * x[n * C + c] * rstd[n];
  }
}
// With xhat = x * rstd and g = dy * w: d(rstd)/dx_j = -rstd^3 x_j / C, so
//   dx = rstd * (g - xhat * mean(g * xhat)).
void rmsnorm_backward(Out dx, In dy, In x, In w, In rstd, std::size_t N, std::size_t C) {
  for (std::size_t n = 0; n < N; ++n) {
    double mean_g_xhat = 0;
    for (std::size_t c = 0; c < C; ++c) mean_g_xhat += dy[n * C + c] * w[c] * x[n * C + c] * rstd[n];
    mean_g_xhat /= static_cast<double>(C);
    for (std::size_t c = 0; c < C; ++c) {
      const double xhat = x[n * C + c] * rstd[n], g = dy[n * C + c] * w[c];
      dx[n * C + c] += rstd[n] * (g - xhat * mean_g_xhat);
    }
  }
}

// --- linear (frozen): y[n,o] = bias[o] + sum_i x[n,i] w[o,i]   (w is (out, in); bias may be empty)
void linear_forward(Out y, In x, In w, In bias, std::size_t N, std::size_t in, std::size_t out) {
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t o = 0; o < out; ++o) {
      double acc = bias.empty() ? 0.0 : bias[o];
      for (std::size_t i = 0; i < in; ++i) acc += x[n * in + i] * w[o * in + i];
      y[n * out + o] = acc;
    }
}
// dx = dy w (the weight and bias are frozen: no gradient for them).
void linear_backward(Out dx, In dy, In w, std::size_t N, std::size_t in, std::size_t out) {
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t o = 0; o < out; ++o) {
      const double g = dy[n * out + o];
      for (std::size_t i = 0; i < in; ++i) dx[n * in + i] += g * w[o * in + i];
    }
}

// --- LoRA branch: y += s * z B^T,  z = xd A^T,  xd = mask * x  (s = alpha/r; no mask: xd = x)
// A (r, in), B (out, r). xd and z are kept for backward.
struct LoraCache {
  Vec xd;  // (N, in) the adapter's input after dropout
  Vec z;   // (N, r)  xd A^T
};
struct LoraShape {
  std::size_t N, in, out, r;
  double scale;
};
void lora_forward(Out y, LoraCache& cache, In x, In mask, const LoraAdapter& ad, const LoraShape& s) {
  cache.xd.assign(x.begin(), x.end());
  if (!mask.empty())
    for (std::size_t i = 0; i < cache.xd.size(); ++i) cache.xd[i] *= mask[i];
  cache.z.assign(s.N * s.r, 0.0);
  for (std::size_t n = 0; n < s.N; ++n)
    for (std::size_t j = 0; j < s.r; ++j) {
      double acc = 0;
      for (std::size_t i = 0; i < s.in; ++i) acc += cache.xd[n * s.in + i] * ad.A[j * s.in + i];
      cache.z[n * s.r + j] = acc;
    }
  for (std::size_t n = 0; n < s.N; ++n)
    for (std::size_t o = 0; o < s.out; ++o) {
      double acc = 0;
      for (std::size_t j = 0; j < s.r; ++j) acc += cache.z[n * s.r + j] * ad.B[o * s.r + j];
      y[n * s.out + o] += s.scale * acc;
    }
}
// dB += s * dy^T z,   dz = s * dy B,   dA += dz^T xd,   dx += mask * (dz A).
// grad may be null: only dx is wanted.
void lora_backward(Out dx, LoraAdapter* grad, In dy, const LoraCache& cache, In mask, const LoraAdapter& ad,
                   const LoraShape& s) {
  Vec dz(s.N * s.r, 0.0), dxd(s.N * s.in, 0.0);
  for (std::size_t n = 0; n < s.N; ++n)
    for (std::size_t o = 0; o < s.out; ++o) {
      const double g = s.scale * dy[n * s.out + o];
      for (std::size_t j = 0; j < s.r; ++j) {
        if (grad) grad->B[o * s.r + j] += g * cache.z[n * s.r + j];
        dz[n * s.r + j] += g * ad.B[o * s.r + j];
      }
    }
  for (std::size_t n = 0; n < s.N; ++n)
    for (std::size_t j = 0; j < s.r; ++j)
      for (std::size_t i = 0; i < s.in; ++i) {
        if (grad) grad->A[j * s.in + i] += dz[n * s.r + j] * cache.xd[n * s.in + i];
        dxd[n * s.in + i] += dz[n * s.r + j] * ad.A[j * s.in + i];
      }
  for (std::size_t i = 0; i < dxd.size(); ++i) dx[i] += mask.empty() ? dxd[i] : mask[i] * dxd[i];
}

// --- projection: y = x W^T (+ b) (+ the LoRA branch when the projection is a target) --------
struct ProjectionContext {
  In w, bias;
  std::size_t in, out;
  const LoraAdapter* adapter;  // null: not a LoRA target
  In mask;                     // empty: no dropout
  LoraAdapter* grad;           // null: no gradients wanted
  std::size_t r;
  double scale;
};
void projection_forward(Out y, LoraCache& cache, In x, const ProjectionContext& p, std::size_t N) {
  linear_forward(y, x, p.w, p.bias, N, p.in, p.out);
  if (p.adapter) lora_forward(y, cache, x, p.mask, *p.adapter, {N, p.in, p.out, p.r, p.scale});
}
void projection_backward(Out dx, In dy, const LoraCache& cache, const ProjectionContext& p, std::size_t N) {
  linear_backward(dx, dy, p.w, N, p.in, p.out);
  if (p.adapter) lora_backward(dx, p.grad, dy, cache, p.mask, *p.adapter, {N, p.in, p.out, p.r, p.scale});
}

// --- RoPE over (B, T, heads*HD): each head's vector at position t turned by rope_rotate --------
// Backward is the inverse (transposed) rotation of the gradient.
void rope_apply(Out x, std::size_t heads, const Dims& d, bool inverse) {
  for (std::size_t b = 0; b < d.B; ++b)
    for (std::size_t t = 0; t < d.T; ++t)
      for (std::size_t h = 0; h < heads; ++h)
        rope_rotate(x.subspan(((b * d.T + t) * heads + h) * d.HD, d.HD), static_cast<int>(t), d.theta, inverse);
}

// --- causal attention with grouped-query heads ----------------------------------------------
// q is (B, T, NH*HD), k and v (B, T, NKV*HD); query head h reads key/value head h / (NH/NKV).
// att[t,:] = softmax over t2 <= t of q_t . k_t2 / sqrt(HD) (0 above the diagonal),
// y_t = sum_t2 att[t,t2] v_t2 (y is (B, T, NH*HD)). att is (B, NH, T, T).
void attention_forward(Out y, Out att, In q, In k, In v, const Dims& d) {
  const std::size_t T = d.T, HD = d.HD, Q = d.Q(), KV = d.KV(), group = d.NH / d.NKV;
  const double scale = 1.0 / std::sqrt(static_cast<double>(HD));
  for (std::size_t b = 0; b < d.B; ++b)
    for (std::size_t h = 0; h < d.NH; ++h) {
      const std::size_t kvh = h / group;
      for (std::size_t t = 0; t < T; ++t) {
        const double* qt = &q[(b * T + t) * Q + h * HD];
        double* row = &att[((b * d.NH + h) * T + t) * T];
        double max_score = -std::numeric_limits<double>::infinity();
        for (std::size_t t2 = 0; t2 <= t; ++t2) {
          const double* kt = &k[(b * T + t2) * KV + kvh * HD];
          double dot = 0;
          for (std::size_t i = 0; i < HD; ++i) dot += qt[i] * kt[i];
          row[t2] = dot * scale;
          max_score = std::max(max_score, row[t2]);
        }
        double sum = 0;  // softmax, shifted by the row's maximum so exp cannot overflow
        for (std::size_t t2 = 0; t2 <= t; ++t2) sum += (row[t2] = std::exp(row[t2] - max_score));
        for (std::size_t t2 = 0; t2 < T; ++t2) row[t2] = t2 <= t ? row[t2] / sum : 0.0;
        double* out = &y[(b * T + t) * Q + h * HD];
        for (std::size_t i = 0; i < HD; ++i) out[i] = 0;
        for (std::size_t t2 = 0; t2 <= t; ++t2) {
          const double* vt = &v[(b * T + t2) * KV + kvh * HD];
          for (std::size_t i = 0; i < HD; ++i) out[i] += row[t2] * vt[i];
        }
      }
    }
}
// datt[t2] = dy_t . v_t2 and dv_t2 += att[t,t2] dy_t; through the softmax
// dscore[t2] = att[t2] * (datt[t2] - sum_t3 att[t3] datt[t3]); then dq_t += dscore k_t2 / sqrt(HD)
// and dk_t2 += dscore q_t / sqrt(HD). The NH/NKV query heads of a group all add into their
// shared key/value head's dk and dv.
void attention_backward(Out dq, Out dk, Out dv, In dy, In q, In k, In v, In att, const Dims& d) {
  const std::size_t T = d.T, HD = d.HD, Q = d.Q(), KV = d.KV(), group = d.NH / d.NKV;
  const double scale = 1.0 / std::sqrt(static_cast<double>(HD));
  Vec datt(T);
  for (std::size_t b = 0; b < d.B; ++b)
    for (std::size_t h = 0; h < d.NH; ++h) {
      const std::size_t kvh = h / group;
      for (std::size_t t = 0; t < T; ++t) {
        const double* row = &att[((b * d.NH + h) * T + t) * T];
        const double* dout = &dy[(b * T + t) * Q + h * HD];
        double weighted = 0;  // sum_t3 att[t3] * datt[t3]
        for (std::size_t t2 = 0; t2 <= t; ++t2) {
          const double* vt = &v[(b * T + t2) * KV + kvh * HD];
          double* dvt = &dv[(b * T + t2) * KV + kvh * HD];
          datt[t2] = 0;
          for (std::size_t i = 0; i < HD; ++i) {
            datt[t2] += dout[i] * vt[i];
            dvt[i] += row[t2] * dout[i];
          }
          weighted += row[t2] * datt[t2];
        }
        const double* qt = &q[(b * T + t) * Q + h * HD];
        double* dqt = &dq[(b * T + t) * Q + h * HD];
        for (std::size_t t2 = 0; t2 <= t; ++t2) {
          const double dscore = row[t2] * (datt[t2] - weighted) * scale;
          const double* kt = &k[(b * T + t2) * KV + kvh * HD];
          double* dkt = &dk[(b * T + t2) * KV + kvh * HD];
          for (std::size_t i = 0; i < HD; ++i) {
            dqt[i] += dscore * kt[i];
            dkt[i] += dscore * qt[i];
          }
        }
      }
    }
}

// --- SwiGLU: a = silu(g) * u,  silu(g) = g * sigmoid(g) ----------------------------------------
double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
void swiglu_forward(Out a, In g, In u) {
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = g[i] * sigmoid(g[i]) * u[i];
}
// du = da * silu(g),   dg = da * u * silu'(g),  silu'(g) = sigmoid(g) * (1 + g * (1 - sigmoid(g))).
void swiglu_backward(Out dg, Out du, In da, In g, In u) {
  for (std::size_t i = 0; i < da.size(); ++i) {
    const double s = sigmoid(g[i]);
    du[i] += da[i] * g[i] * s;
    dg[i] += da[i] * u[i] * s * (1.0 + g[i] * (1.0 - s));
  }
}

// --- residual: y = a + b (its backward passes the gradient to both unchanged) ----------------
void residual_forward(Out y, In a, In b) {
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = a[i] + b[i];
}

// --- softmax + cross-entropy: loss = mean over rows of logsumexp(logits) - logits[target] -----
// probs are kept for backward. logsumexp rather than log(prob) so a tiny probability keeps its digits.
double crossentropy_forward(Out probs, In logits, std::span<const int> targets, std::size_t N, std::size_t V) {
  double total = 0;
  for (std::size_t n = 0; n < N; ++n) {
    const auto row = logits.subspan(n * V, V);
    const double max_logit = *std::max_element(row.begin(), row.end());
    double sum = 0;
    for (std::size_t v = 0; v < V; ++v) sum += (probs[n * V + v] = std::exp(row[v] - max_logit));
    for (std::size_t v = 0; v < V; ++v) probs[n * V + v] /= sum;
    total += max_logit + std::log(sum) - row[static_cast<std::size_t>(targets[n])];
  }
  return total / static_cast<double>(N);
}
// d(mean loss)/d(logits) = (probs - onehot(target)) / N
void crossentropy_backward(Out dlogits, In probs, std::span<const int> targets, std::size_t N, std::size_t V) {
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t v = 0; v < V; ++v) {
      const double onehot = v == static_cast<std::size_t>(targets[n]) ? 1.0 : 0.0;
      dlogits[n * V + v] += (probs[n * V + v] - onehot) / static_cast<double>(N);
    }
}

// --- one decoder layer (pre-norm, as Qwen2) ---------------------------------------------------
//   x1 = rmsnorm(h) w_in;  q = rope(q_proj(x1)), k = rope(k_proj(x1)), v = v_proj(x1)
//   h_mid = h + o_proj(attention(q, k, v))
//   x2 = rmsnorm(h_mid) w_post;  h_out = h_mid + down_proj(swiglu(gate_proj(x2), up_proj(x2)))
// Each projection carries its LoRA branch when it is a target.
using LayerProjections = std::array<ProjectionContext, kProjections>;

struct LayerActivations {
  Vec x1, rstd1, q_pre, k_pre, q, k, v, att, y, o, h_mid, x2, rstd2, g, u, a, mlp, h_out;
  std::array<LoraCache, kProjections> lora;
  explicit LayerActivations(const Dims& d)
      : x1(d.N() * d.C), rstd1(d.N()), q_pre(d.N() * d.Q()), k_pre(d.N() * d.KV()), q(d.N() * d.Q()),
        k(d.N() * d.KV()), v(d.N() * d.KV()), att(d.B * d.NH * d.T * d.T), y(d.N() * d.Q()), o(d.N() * d.C),
        h_mid(d.N() * d.C), x2(d.N() * d.C), rstd2(d.N()), g(d.N() * d.I), u(d.N() * d.I), a(d.N() * d.I),
        mlp(d.N() * d.C), h_out(d.N() * d.C) {}
};

void layer_forward(LayerActivations& a, In h, const QwenLayerWeights& w, const LayerProjections& p, const Dims& d) {
  const std::size_t N = d.N();
  auto proj = [&](Out y, Projection which, In x) {
    projection_forward(y, a.lora[index_of(which)], x, p[index_of(which)], N);
  };
  rmsnorm_forward(a.x1, a.rstd1, h, w.w_in, N, d.C, d.eps);
  proj(a.q_pre, Projection::q, a.x1);
  proj(a.k_pre, Projection::k, a.x1);
  proj(a.v, Projection::v, a.x1);
  a.q = a.q_pre;
  rope_apply(a.q, d.NH, d, false);
  a.k = a.k_pre;
  rope_apply(a.k, d.NKV, d, false);
  attention_forward(a.y, a.att, a.q, a.k, a.v, d);
  proj(a.o, Projection::o, a.y);
  residual_forward(a.h_mid, h, a.o);
  rmsnorm_forward(a.x2, a.rstd2, a.h_mid, w.w_post, N, d.C, d.eps);
  proj(a.g, Projection::gate, a.x2);
  proj(a.u, Projection::up, a.x2);
  swiglu_forward(a.a, a.g, a.u);
  proj(a.mlp, Projection::down, a.a);
  residual_forward(a.h_out, a.h_mid, a.mlp);
}

// dh holds d(loss)/d(h_out) on entry and d(loss)/d(h) on return: the residual adds pass it
// through unchanged, and each branch adds its own part on the way back.
void layer_backward(Out dh, const LayerActivations& a, In h, const QwenLayerWeights& w, const LayerProjections& p,
                    const Dims& d) {
  const std::size_t N = d.N();
  auto proj_back = [&](Out dx, Projection which, In dy) {
    projection_backward(dx, dy, a.lora[index_of(which)], p[index_of(which)], N);
  };
  Vec da(N * d.I), dg(N * d.I), du(N * d.I), dx2(N * d.C), dy(N * d.Q()), dq(N * d.Q()), dk(N * d.KV()),
      dv(N * d.KV()), dx1(N * d.C);
  proj_back(da, Projection::down, dh);
  swiglu_backward(dg, du, da, a.g, a.u);
  proj_back(dx2, Projection::gate, dg);
  proj_back(dx2, Projection::up, du);
  rmsnorm_backward(dh, dx2, a.h_mid, w.w_post, a.rstd2, N, d.C);
  // dh is now d(loss)/d(h_mid)
  proj_back(dy, Projection::o, dh);
  attention_backward(dq, dk, dv, dy, a.q, a.k, a.v, a.att, d);
  rope_apply(dq, d.NH, d, true);  // now d(loss)/d(q_pre)
  rope_apply(dk, d.NKV, d, true);
  proj_back(dx1, Projection::q, dq);
  proj_back(dx1, Projection::k, dk);
  proj_back(dx1, Projection::v, dv);
  rmsnorm_backward(dh, dx1, h, w.w_in, a.rstd1, N, d.C);
}

// --- checks -------------------------------------------------------------------------------------
[[noreturn]] void fail(const std::string& what) {
  throw std::invalid_argument("qwen_lora_forward_backward: " + what);
}
void check_size(const std::vector<double>& v, std::size_t expected, const std::string& name) {
  if (v.size() != expected)
    fail(name + " holds " + std::to_string(v.size()) + " values, the config needs " + std::to_string(expected));
}
std::string layer_name(std::size_t l) { return "layers[" + std::to_string(l) + "]"; }

void check_base(const QwenConfig& config, const QwenBaseWeights& base) {
  const auto V = static_cast<std::size_t>(config.vocab), C = static_cast<std::size_t>(config.hidden);
  check_size(base.embed, V * C, "embed");
  check_size(base.w_final, C, "w_final");
  check_size(base.head, V * C, "head");
  if (base.layers.size() != static_cast<std::size_t>(config.layers))
    fail("the base has " + std::to_string(base.layers.size()) + " layers, the config " +
         std::to_string(config.layers));
  for (std::size_t l = 0; l < base.layers.size(); ++l) {
    const auto& w = base.layers[l];
    check_size(w.w_in, C, layer_name(l) + ".w_in");
    check_size(w.w_post, C, layer_name(l) + ".w_post");
    for (Projection p : kAllProjections) {
      const auto in = static_cast<std::size_t>(projection_in(config, p)),
                 out = static_cast<std::size_t>(projection_out(config, p));
      check_size(w.weight(p), out * in, layer_name(l) + "." + projection_name(p) + " weight");
      check_size(w.bias(p), projection_has_bias(p) ? out : 0, layer_name(l) + "." + projection_name(p) + " bias");
    }
  }
}

void check_lora(const QwenConfig& config, const LoraConfig& lora, const LoraWeights& adapters) {
  if (lora.rank <= 0) fail("LoRA rank " + std::to_string(lora.rank) + " must be positive");
  if (!std::isfinite(lora.alpha)) fail("LoRA alpha must be finite");
  if (!(lora.dropout >= 0 && lora.dropout < 1)) fail("LoRA dropout must lie in [0, 1)");
  for (std::size_t j = 0; j < lora.targets.size(); ++j)
    for (std::size_t j2 = 0; j2 < j; ++j2)
      if (lora.targets[j] == lora.targets[j2])
        fail(std::string("LoRA target ") + projection_name(lora.targets[j]) + " listed twice");
  if (adapters.layers.size() != static_cast<std::size_t>(config.layers))
    fail("the adapters have " + std::to_string(adapters.layers.size()) + " layers, the config " +
         std::to_string(config.layers));
  const auto r = static_cast<std::size_t>(lora.rank);
  for (std::size_t l = 0; l < adapters.layers.size(); ++l) {
    if (adapters.layers[l].size() != lora.targets.size())
      fail("adapters " + layer_name(l) + " holds " + std::to_string(adapters.layers[l].size()) +
           " adapters, LoraConfig has " + std::to_string(lora.targets.size()) + " targets");
    for (std::size_t j = 0; j < lora.targets.size(); ++j) {
      const Projection p = lora.targets[j];
      const std::string name = "adapter " + layer_name(l) + "." + projection_name(p);
      check_size(adapters.layers[l][j].A, r * static_cast<std::size_t>(projection_in(config, p)), name + " A");
      check_size(adapters.layers[l][j].B, static_cast<std::size_t>(projection_out(config, p)) * r, name + " B");
    }
  }
}

void check_masks(const QwenConfig& config, const LoraConfig& lora, const DropoutMasks& masks, std::size_t N) {
  if (masks.layers.size() != static_cast<std::size_t>(config.layers))
    fail("the dropout masks have " + std::to_string(masks.layers.size()) + " layers, the config " +
         std::to_string(config.layers));
  const double keep = 1.0 / (1.0 - lora.dropout);
  for (std::size_t l = 0; l < masks.layers.size(); ++l) {
    if (masks.layers[l].size() != lora.targets.size())
      fail("dropout masks " + layer_name(l) + " holds " + std::to_string(masks.layers[l].size()) +
           " masks, LoraConfig has " + std::to_string(lora.targets.size()) + " targets");
    for (std::size_t j = 0; j < lora.targets.size(); ++j) {
      const auto& m = masks.layers[l][j];
      const std::string name = "dropout mask " + layer_name(l) + "." + projection_name(lora.targets[j]);
      if (m.empty()) continue;
      check_size(m, N * static_cast<std::size_t>(projection_in(config, lora.targets[j])), name + " (B*T*in)");
      for (std::size_t i = 0; i < m.size(); ++i)
        if (m[i] != 0.0 && !(std::abs(m[i] - keep) <= 1e-12 * keep))
          fail(name + "[" + std::to_string(i) + "] = " + std::to_string(m[i]) + ": must be 0 or 1/(1-p) = " +
               std::to_string(keep));
    }
  }
}

void check_inputs(const QwenConfig& config, const QwenBaseWeights& base, const LoraConfig& lora,
                  const LoraWeights& adapters, std::span<const int> tokens, std::span<const int> targets, int B,
                  int T, const DropoutMasks* masks, const LoraWeights* grads) {
  validate(config);
  if (B <= 0 || T <= 0) fail("B=" + std::to_string(B) + ", T=" + std::to_string(T) + ": both must be positive");
  const std::size_t N = static_cast<std::size_t>(B) * static_cast<std::size_t>(T);
  if (tokens.size() != N || targets.size() != N)
    fail("tokens and targets must hold B*T = " + std::to_string(N) + " ids each (they hold " +
         std::to_string(tokens.size()) + " and " + std::to_string(targets.size()) + ")");
  for (std::span<const int> ids : {tokens, targets})
    for (int id : ids)
      if (id < 0 || id >= config.vocab)
        fail("token id " + std::to_string(id) + " outside the vocabulary [0, " + std::to_string(config.vocab) + ")");
  check_base(config, base);
  check_lora(config, lora, adapters);
  if (masks) check_masks(config, lora, *masks, N);
  if (grads == &adapters) fail("grads must not be the adapters themselves");
}

// The seven projections of layer l: base weight and bias, and the adapter, its mask and its
// gradient when the projection is a target.
LayerProjections layer_projections(const QwenConfig& config, const QwenLayerWeights& w, const LoraConfig& lora,
                                   const LoraWeights& adapters, const DropoutMasks* masks, LoraWeights* grads,
                                   std::size_t l) {
  LayerProjections out{};
  for (Projection p : kAllProjections)
    out[index_of(p)] = {.w = w.weight(p),
                        .bias = w.bias(p),
                        .in = static_cast<std::size_t>(projection_in(config, p)),
                        .out = static_cast<std::size_t>(projection_out(config, p)),
                        .adapter = nullptr,
                        .mask = {},
                        .grad = nullptr,
                        .r = static_cast<std::size_t>(lora.rank),
                        .scale = lora.scale()};
  for (std::size_t j = 0; j < lora.targets.size(); ++j) {
    auto& ctx = out[index_of(lora.targets[j])];
    ctx.adapter = &adapters.layers[l][j];
    if (masks) ctx.mask = masks->layers[l][j];
    if (grads) ctx.grad = &grads->layers[l][j];
  }
  return out;
}

}  // namespace

// --- the model ------------------------------------------------------------------------------
//   h = embed[tokens]; h = layer_l(h) for each l; logits = (rmsnorm(h) w_final) head^T
double qwen_lora_forward_backward(const QwenConfig& config, const QwenBaseWeights& base, const LoraConfig& lora,
                                  const LoraWeights& adapters, std::span<const int> tokens,
                                  std::span<const int> targets, int B, int T, const DropoutMasks* masks,
                                  LoraWeights* grads, const ReferenceExtras& extras) {
  check_inputs(config, base, lora, adapters, tokens, targets, B, T, masks, grads);
  const Dims d{static_cast<std::size_t>(B),
               static_cast<std::size_t>(T),
               static_cast<std::size_t>(config.hidden),
               static_cast<std::size_t>(config.heads),
               static_cast<std::size_t>(config.kv_heads),
               static_cast<std::size_t>(config.head_dim),
               static_cast<std::size_t>(config.intermediate),
               static_cast<std::size_t>(config.vocab),
               config.rms_eps,
               config.rope_theta};
  const std::size_t N = d.N(), C = d.C, V = d.V, L = static_cast<std::size_t>(config.layers);
  const bool backward = grads != nullptr || extras.d_embedded != nullptr;
  if (grads) {  // the adapters' shape, zeroed: every backward adds into it
    grads->layers.assign(adapters.layers.size(), {});
    for (std::size_t l = 0; l < L; ++l)
      for (const auto& ad : adapters.layers[l])
        grads->layers[l].push_back({Vec(ad.A.size(), 0.0), Vec(ad.B.size(), 0.0)});
  }
  std::vector<LayerProjections> projections;
  for (std::size_t l = 0; l < L; ++l)
    projections.push_back(layer_projections(config, base.layers[l], lora, adapters, masks, grads, l));

  // Forward.
  Vec embedded(N * C);
  embedding_forward(embedded, tokens, base.embed, C);
  std::vector<LayerActivations> layers;
  layers.reserve(L);  // the spans into earlier layers' outputs stay valid
  for (std::size_t l = 0; l < L; ++l) {
    const In h = l == 0 ? In(embedded) : In(layers.back().h_out);
    layers.emplace_back(d);
    layer_forward(layers.back(), h, base.layers[l], projections[l], d);
  }
  const In last = L == 0 ? In(embedded) : In(layers.back().h_out);
  Vec xf(N * C), rstdf(N), logits(N * V), probs(N * V);
  rmsnorm_forward(xf, rstdf, last, base.w_final, N, C, d.eps);
  linear_forward(logits, xf, base.head, {}, N, C, V);
  const double loss = crossentropy_forward(probs, logits, targets, N, V);
  if (extras.logits) *extras.logits = logits;
  if (!backward) return loss;

  // Backward, the same steps in reverse.
  Vec dlogits(N * V), dxf(N * C), dh(N * C);
  crossentropy_backward(dlogits, probs, targets, N, V);
  linear_backward(dxf, dlogits, base.head, N, C, V);
  rmsnorm_backward(dh, dxf, last, base.w_final, rstdf, N, C);
  for (std::size_t l = L; l-- > 0;) {
    const In h = l == 0 ? In(embedded) : In(layers[l - 1].h_out);
    layer_backward(dh, layers[l], h, base.layers[l], projections[l], d);
  }
  if (extras.d_embedded) *extras.d_embedded = dh;
  return loss;
}

void rope_rotate(std::span<double> x, int position, double theta, bool inverse) {
  const std::size_t half = x.size() / 2;
  const double hd = static_cast<double>(x.size());
  for (std::size_t i = 0; i < half; ++i) {
    const double inv_freq = std::pow(theta, -2.0 * static_cast<double>(i) / hd);
    const double angle = (inverse ? -1.0 : 1.0) * static_cast<double>(position) * inv_freq;
    const double c = std::cos(angle), s = std::sin(angle);
    const double x1 = x[i], x2 = x[i + half];
    x[i] = x1 * c - x2 * s;
    x[i + half] = x2 * c + x1 * s;
  }
}

const std::vector<double>& QwenLayerWeights::weight(Projection p) const {
  switch (p) {
    case Projection::q: return wq;
    case Projection::k: return wk;
    case Projection::v: return wv;
    case Projection::o: return wo;
    case Projection::gate: return wg;
    case Projection::up: return wu;
    case Projection::down: return wd;
  }
  throw std::invalid_argument("QwenLayerWeights::weight: unknown projection");
}
std::vector<double>& QwenLayerWeights::weight(Projection p) {
  return const_cast<std::vector<double>&>(std::as_const(*this).weight(p));
}
const std::vector<double>& QwenLayerWeights::bias(Projection p) const {
  static const std::vector<double> none;
  switch (p) {
    case Projection::q: return bq;
    case Projection::k: return bk;
    case Projection::v: return bv;
    default: return none;
  }
}
std::vector<double>& QwenLayerWeights::bias(Projection p) {
  if (!projection_has_bias(p))
    throw std::invalid_argument(std::string("QwenLayerWeights::bias: ") + projection_name(p) + " has no bias");
  return const_cast<std::vector<double>&>(std::as_const(*this).bias(p));
}

namespace {
// Uniform in [0, 1) from the top 53 bits; mt19937_64's sequence is fixed by the standard,
// std::normal_distribution's is not, hence Box-Muller by hand.
double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }
double standard_normal(std::mt19937_64& rng) {
  const double u1 = 1.0 - uniform01(rng);  // (0, 1]: log stays finite
  const double u2 = uniform01(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}
Vec normal_vector(std::mt19937_64& rng, std::size_t n, double std_dev) {
  Vec v(n);
  for (double& x : v) x = std_dev * standard_normal(rng);
  return v;
}
}  // namespace

QwenBaseWeights init_base(const QwenConfig& config, std::uint64_t seed) {
  validate(config);
  std::mt19937_64 rng(seed);
  const auto V = static_cast<std::size_t>(config.vocab), C = static_cast<std::size_t>(config.hidden);
  constexpr double kStd = 0.02;
  QwenBaseWeights base;
  base.embed = normal_vector(rng, V * C, kStd);
  for (int l = 0; l < config.layers; ++l) {
    QwenLayerWeights w;
    w.w_in = Vec(C, 1.0);
    w.w_post = Vec(C, 1.0);
    for (Projection p : kAllProjections) {  // q, k, v, o, gate, up, down: weight, then bias
      const auto in = static_cast<std::size_t>(projection_in(config, p)),
                 out = static_cast<std::size_t>(projection_out(config, p));
      w.weight(p) = normal_vector(rng, out * in, kStd);
      if (projection_has_bias(p)) w.bias(p) = normal_vector(rng, out, kStd);
    }
    base.layers.push_back(std::move(w));
  }
  base.w_final = Vec(C, 1.0);
  base.head = normal_vector(rng, V * C, kStd);
  return base;
}

LoraWeights init_lora(const QwenConfig& config, const LoraConfig& lora, std::uint64_t seed, bool b_zero) {
  validate(config);
  if (lora.rank <= 0) throw std::invalid_argument("init_lora: LoRA rank must be positive");
  std::mt19937_64 rng(seed);
  const auto r = static_cast<std::size_t>(lora.rank);
  LoraWeights out;
  out.layers.resize(static_cast<std::size_t>(config.layers));
  for (auto& layer : out.layers)
    for (Projection p : lora.targets) {
      const auto in = static_cast<std::size_t>(projection_in(config, p)),
                 o = static_cast<std::size_t>(projection_out(config, p));
      LoraAdapter ad{Vec(r * in), Vec(o * r, 0.0)};
      const double bound = 1.0 / std::sqrt(static_cast<double>(in));  // kaiming_uniform_(a=sqrt(5))
      for (double& x : ad.A) x = bound * (2.0 * uniform01(rng) - 1.0);
      if (!b_zero) ad.B = normal_vector(rng, o * r, 0.02);
      layer.push_back(std::move(ad));
    }
  return out;
}

DropoutMasks random_dropout_masks(const QwenConfig& config, const LoraConfig& lora, int B, int T,
                                  std::uint64_t seed) {
  validate(config);
  if (B <= 0 || T <= 0) throw std::invalid_argument("random_dropout_masks: B and T must be positive");
  if (!(lora.dropout >= 0 && lora.dropout < 1))
    throw std::invalid_argument("random_dropout_masks: LoRA dropout must lie in [0, 1)");
  std::mt19937_64 rng(seed);
  const std::size_t N = static_cast<std::size_t>(B) * static_cast<std::size_t>(T);
  const double keep = 1.0 / (1.0 - lora.dropout);
  DropoutMasks masks;
  masks.layers.resize(static_cast<std::size_t>(config.layers));
  for (auto& layer : masks.layers)
    for (Projection p : lora.targets) {
      Vec m(N * static_cast<std::size_t>(projection_in(config, p)));
      for (double& x : m) x = uniform01(rng) < lora.dropout ? 0.0 : keep;
      layer.push_back(std::move(m));
    }
  return masks;
}

}  // namespace gpuaccept::fsdp
