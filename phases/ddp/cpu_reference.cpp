// Reads top to bottom like llm.c's train_gpt2.c: the layers, each forward beside its
// backward, then one transformer block, then the model. Shapes: N = B*T rows of the
// residual stream, C channels, NH heads of hs = C/NH channels, V vocabulary.
// Every backward *adds* into its gradient outputs (a tensor used twice, like wte, sums
// both contributions); the caller zeroes them first.
#include "ddp/cpu_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <random>
#include <stdexcept>
#include <string>

#include "ddp/param_layout.h"

namespace gpuaccept::ddp {

namespace {

using Vec = std::vector<double>;
using In = std::span<const double>;
using Out = std::span<double>;

struct Dims {
  std::size_t B, T, C, NH, V;
  std::size_t N() const { return B * T; }
};

// --- encoder: x[b,t,:] = wte[tokens[b,t],:] + wpe[t,:] ------------------------------------
void encoder_forward(Out x, std::span<const int> tokens, In wte, In wpe, const Dims& d) {
  for (std::size_t b = 0; b < d.B; ++b)
    for (std::size_t t = 0; t < d.T; ++t) {
      const std::size_t n = b * d.T + t, token = static_cast<std::size_t>(tokens[n]);
      for (std::size_t c = 0; c < d.C; ++c) x[n * d.C + c] = wte[token * d.C + c] + wpe[t * d.C + c];
    }
}
// Each position's gradient goes to its token's row and its position's row.
void encoder_backward(Out dwte, Out dwpe, In dx, std::span<const int> tokens, const Dims& d) {
  for (std::size_t b = 0; b < d.B; ++b)
    for (std::size_t t = 0; t < d.T; ++t) {
      const std::size_t n = b * d.T + t, token = static_cast<std::size_t>(tokens[n]);
      for (std::size_t c = 0; c < d.C; ++c) {
        dwte[token * d.C + c] += dx[n * d.C + c];
        dwpe[t * d.C + c] += dx[n * d.C + c];
      }
    }
}

// --- LayerNorm: y = w * (x - mean) * rstd + b, rstd = 1/sqrt(var + 1e-5), per row of C --
// var is the biased (divide by C) variance, as in PyTorch. mean and rstd are kept for backward.
constexpr double kLayerNormEps = 1e-5;
void layernorm_forward(Out y, Out mean, Out rstd, In x, In w, In b, std::size_t N, std::size_t C) {
  for (std::size_t n = 0; n < N; ++n) {
    const auto row = x.subspan(n * C, C);
    double m = 0, v = 0;
    for (double xi : row) m += xi;
    m /= static_cast<double>(C);
    for (double xi : row) v += (xi - m) * (xi - m);
    v /= static_cast<double>(C);
    const double s = 1.0 / std::sqrt(v + kLayerNormEps);
    for (std::size_t c = 0; c < C; ++c) y[n * C + c] = w[c] * (row[c] - m) * s + b[c];
    mean[n] = m;
    rstd[n] = s;
  }
}
// With xhat = (x - mean) * rstd and g = dy * w:
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),  dw += dy * xhat,  db += dy.
void layernorm_backward(Out dx, Out dw, Out db, In dy, In x, In w, In mean, In rstd, std::size_t N, std::size_t C) {
  for (std::size_t n = 0; n < N; ++n) {
    double mean_g = 0, mean_g_xhat = 0;
    for (std::size_t c = 0; c < C; ++c) {
      const double xhat = (x[n * C + c] - mean[n]) * rstd[n], g = dy[n * C + c] * w[c];
      mean_g += g;
      mean_g_xhat += g * xhat;
    }
    mean_g /= static_cast<double>(C);
    mean_g_xhat /= static_cast<double>(C);
    for (std::size_t c = 0; c < C; ++c) {
      const double xhat = (x[n * C + c] - mean[n]) * rstd[n], g = dy[n * C + c] * w[c];
      dx[n * C + c] += rstd[n] * (g - mean_g - xhat * mean_g_xhat);
      dw[c] += dy[n * C + c] * xhat;
      db[c] += dy[n * C + c];
    }
  }
}

// --- matmul: y[n,o] = bias[o] + sum_i x[n,i] * w[o,i]   (w is (OC, C); bias may be empty) -
void matmul_forward(Out y, In x, In w, In bias, std::size_t N, std::size_t C, std::size_t OC) {
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t o = 0; o < OC; ++o) {
      double acc = bias.empty() ? 0.0 : bias[o];
      for (std::size_t i = 0; i < C; ++i) acc += x[n * C + i] * w[o * C + i];
      y[n * OC + o] = acc;
    }
}
// dx = dy w,  dw += dy^T x,  dbias += sum over rows of dy.
void matmul_backward(Out dx, Out dw, Out dbias, In dy, In x, In w, std::size_t N, std::size_t C, std::size_t OC) {
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t o = 0; o < OC; ++o) {
      const double g = dy[n * OC + o];
      for (std::size_t i = 0; i < C; ++i) {
        dx[n * C + i] += g * w[o * C + i];
        dw[o * C + i] += g * x[n * C + i];
      }
      if (!dbias.empty()) dbias[o] += g;
    }
}

// --- causal self-attention -----------------------------------------------------------------
// qkv is (B, T, 3C): query, key, value side by side, head h in channels h*hs .. h*hs+hs-1 of
// each. For each head: att[t,:] = softmax over t2 <= t of q_t . k_t2 / sqrt(hs) (0 above the
// diagonal: a position sees only the past), y_t = sum_t2 att[t,t2] v_t2. att is (B, NH, T, T).
void attention_forward(Out y, Out att, In qkv, const Dims& d) {
  const std::size_t T = d.T, C = d.C, hs = C / d.NH;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hs));
  for (std::size_t b = 0; b < d.B; ++b)
    for (std::size_t h = 0; h < d.NH; ++h)
      for (std::size_t t = 0; t < T; ++t) {
        const double* q = &qkv[(b * T + t) * 3 * C + h * hs];
        double* row = &att[((b * d.NH + h) * T + t) * T];
        double max_score = -std::numeric_limits<double>::infinity();
        for (std::size_t t2 = 0; t2 <= t; ++t2) {
          const double* k = &qkv[(b * T + t2) * 3 * C + C + h * hs];
          double dot = 0;
          for (std::size_t i = 0; i < hs; ++i) dot += q[i] * k[i];
          row[t2] = dot * scale;
          max_score = std::max(max_score, row[t2]);
        }
        double sum = 0;  // softmax, shifted by the row's maximum so exp cannot overflow
        for (std::size_t t2 = 0; t2 <= t; ++t2) sum += (row[t2] = std::exp(row[t2] - max_score));
        for (std::size_t t2 = 0; t2 < T; ++t2) row[t2] = t2 <= t ? row[t2] / sum : 0.0;
        double* out = &y[(b * T + t) * C + h * hs];
        for (std::size_t i = 0; i < hs; ++i) out[i] = 0;
        for (std::size_t t2 = 0; t2 <= t; ++t2) {
          const double* v = &qkv[(b * T + t2) * 3 * C + 2 * C + h * hs];
          for (std::size_t i = 0; i < hs; ++i) out[i] += row[t2] * v[i];
        }
      }
}
// datt[t2] = dy_t . v_t2 and dv_t2 += att[t,t2] dy_t; through the softmax
// dscore[t2] = att[t2] * (datt[t2] - sum_t3 att[t3] datt[t3]); then dq_t += dscore k_t2 / sqrt(hs)
// and dk_t2 += dscore q_t / sqrt(hs).
void attention_backward(Out dqkv, In dy, In qkv, In att, const Dims& d) {
  const std::size_t T = d.T, C = d.C, hs = C / d.NH;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hs));
  Vec datt(T);
  for (std::size_t b = 0; b < d.B; ++b)
    for (std::size_t h = 0; h < d.NH; ++h)
      for (std::size_t t = 0; t < T; ++t) {
        const double* row = &att[((b * d.NH + h) * T + t) * T];
        const double* dout = &dy[(b * T + t) * C + h * hs];
        double weighted = 0;  // sum_t3 att[t3] * datt[t3]
        for (std::size_t t2 = 0; t2 <= t; ++t2) {
          const double* v = &qkv[(b * T + t2) * 3 * C + 2 * C + h * hs];
          double* dv = &dqkv[(b * T + t2) * 3 * C + 2 * C + h * hs];
          datt[t2] = 0;
          for (std::size_t i = 0; i < hs; ++i) {
            datt[t2] += dout[i] * v[i];
            dv[i] += row[t2] * dout[i];
          }
          weighted += row[t2] * datt[t2];
        }
        const double* q = &qkv[(b * T + t) * 3 * C + h * hs];
        double* dq = &dqkv[(b * T + t) * 3 * C + h * hs];
        for (std::size_t t2 = 0; t2 <= t; ++t2) {
          const double dscore = row[t2] * (datt[t2] - weighted) * scale;
          const double* k = &qkv[(b * T + t2) * 3 * C + C + h * hs];
          double* dk = &dqkv[(b * T + t2) * 3 * C + C + h * hs];
          for (std::size_t i = 0; i < hs; ++i) {
            dq[i] += dscore * k[i];
            dk[i] += dscore * q[i];
          }
        }
      }
}

// --- GELU, tanh approximation (GPT-2's): y = x/2 * (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3)
const double kGeluScale = std::sqrt(2.0 / std::numbers::pi);
void gelu_forward(Out y, In x) {
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double u = kGeluScale * (x[i] + 0.044715 * x[i] * x[i] * x[i]);
    y[i] = 0.5 * x[i] * (1.0 + std::tanh(u));
  }
}
// dy/dx = (1 + tanh u)/2 + x/2 * (1 - tanh^2 u) * sqrt(2/pi) * (1 + 3 * 0.044715 x^2)
void gelu_backward(Out dx, In x, In dy) {
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double u = kGeluScale * (x[i] + 0.044715 * x[i] * x[i] * x[i]);
    const double th = std::tanh(u);
    const double du_dx = kGeluScale * (1.0 + 3 * 0.044715 * x[i] * x[i]);
    const double local = 0.5 * (1.0 + th) + 0.5 * x[i] * (1.0 - th * th) * du_dx;
    dx[i] += local * dy[i];
  }
}

// --- residual: y = a + b (its backward passes the gradient to both unchanged) --------------
void residual_forward(Out y, In a, In b) {
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = a[i] + b[i];
}

// --- softmax + cross-entropy: loss = mean over rows of logsumexp(logits) - logits[target] ---
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

// --- one transformer block (pre-LayerNorm, as GPT-2) ----------------------------------------
//   r2 = r + attproj(attention(qkv(ln1(r))))      r3 = r2 + fcproj(gelu(fc(ln2(r2))))
template <typename D>  // const double for parameters, double for gradients
struct BlockParams {
  std::span<D> ln1w, ln1b, qkvw, qkvb, attprojw, attprojb, ln2w, ln2b, fcw, fcb, fcprojw, fcprojb;
};
template <typename D>
BlockParams<D> block_params(const ParamLayout& layout, std::span<D> flat, int layer) {
  auto at = [&](Param p) { return layout.layer_slice(flat, p, layer); };
  return {at(Param::ln1w),    at(Param::ln1b), at(Param::qkvw),    at(Param::qkvb),
          at(Param::attprojw), at(Param::attprojb), at(Param::ln2w), at(Param::ln2b),
          at(Param::fcw),     at(Param::fcb),  at(Param::fcprojw), at(Param::fcprojb)};
}

// What backward needs from a block's forward.
struct BlockActivations {
  Vec ln1, ln1_mean, ln1_rstd, qkv, att, atty, attproj, residual2, ln2, ln2_mean, ln2_rstd, fch, fch_gelu, fcproj,
      residual3;
  explicit BlockActivations(const Dims& d)
      : ln1(d.N() * d.C), ln1_mean(d.N()), ln1_rstd(d.N()), qkv(d.N() * 3 * d.C), att(d.B * d.NH * d.T * d.T),
        atty(d.N() * d.C), attproj(d.N() * d.C), residual2(d.N() * d.C), ln2(d.N() * d.C), ln2_mean(d.N()),
        ln2_rstd(d.N()), fch(d.N() * 4 * d.C), fch_gelu(d.N() * 4 * d.C), fcproj(d.N() * d.C),
        residual3(d.N() * d.C) {}
};

void block_forward(BlockActivations& a, In residual, const BlockParams<const double>& p, const Dims& d) {
  const std::size_t N = d.N(), C = d.C;
  layernorm_forward(a.ln1, a.ln1_mean, a.ln1_rstd, residual, p.ln1w, p.ln1b, N, C);
  matmul_forward(a.qkv, a.ln1, p.qkvw, p.qkvb, N, C, 3 * C);
  attention_forward(a.atty, a.att, a.qkv, d);
  matmul_forward(a.attproj, a.atty, p.attprojw, p.attprojb, N, C, C);
  residual_forward(a.residual2, residual, a.attproj);
  layernorm_forward(a.ln2, a.ln2_mean, a.ln2_rstd, a.residual2, p.ln2w, p.ln2b, N, C);
  matmul_forward(a.fch, a.ln2, p.fcw, p.fcb, N, C, 4 * C);
  gelu_forward(a.fch_gelu, a.fch);
  matmul_forward(a.fcproj, a.fch_gelu, p.fcprojw, p.fcprojb, N, 4 * C, C);
  residual_forward(a.residual3, a.residual2, a.fcproj);
}

// dresidual holds d(loss)/d(r3) on entry and d(loss)/d(r) on return: the residual adds
// pass it through unchanged, and each branch adds its own part on the way back.
void block_backward(Out dresidual, const BlockParams<double>& g, const BlockActivations& a, In residual,
                    const BlockParams<const double>& p, const Dims& d) {
  const std::size_t N = d.N(), C = d.C;
  Vec dfch_gelu(N * 4 * C), dfch(N * 4 * C), dln2(N * C), datty(N * C), dqkv(N * 3 * C), dln1(N * C);
  matmul_backward(dfch_gelu, g.fcprojw, g.fcprojb, dresidual, a.fch_gelu, p.fcprojw, N, 4 * C, C);
  gelu_backward(dfch, a.fch, dfch_gelu);
  matmul_backward(dln2, g.fcw, g.fcb, dfch, a.ln2, p.fcw, N, C, 4 * C);
  layernorm_backward(dresidual, g.ln2w, g.ln2b, dln2, a.residual2, p.ln2w, a.ln2_mean, a.ln2_rstd, N, C);
  // dresidual is now d(loss)/d(r2)
  matmul_backward(datty, g.attprojw, g.attprojb, dresidual, a.atty, p.attprojw, N, C, C);
  attention_backward(dqkv, datty, a.qkv, a.att, d);
  matmul_backward(dln1, g.qkvw, g.qkvb, dqkv, a.ln1, p.qkvw, N, C, 3 * C);
  layernorm_backward(dresidual, g.ln1w, g.ln1b, dln1, residual, p.ln1w, a.ln1_mean, a.ln1_rstd, N, C);
}

// --- the model ------------------------------------------------------------------------------
//   x = wte[tokens] + wpe[positions]; x = block_l(x) for each l; logits = lnf(x) wte^T
struct Activations {
  Vec encoded;
  std::vector<BlockActivations> blocks;
  Vec lnf, lnf_mean, lnf_rstd, logits, probs;
};

void check_inputs(const GptConfig& config, const ParamLayout& layout, std::span<const double> params,
                  std::span<const int> tokens, std::span<const int> targets, int B, int T, std::span<double> grads) {
  auto fail = [](const std::string& what) { throw std::invalid_argument("gpt_forward_backward: " + what); };
  if (B <= 0 || T <= 0 || T > config.max_seq)
    fail("B=" + std::to_string(B) + ", T=" + std::to_string(T) + ": need B > 0 and 0 < T <= max_seq (" +
         std::to_string(config.max_seq) + ")");
  const std::size_t N = static_cast<std::size_t>(B) * static_cast<std::size_t>(T);
  if (tokens.size() != N || targets.size() != N)
    fail("tokens and targets must hold B*T = " + std::to_string(N) + " ids each");
  if (params.size() != layout.total() || (!grads.empty() && grads.size() != layout.total()))
    fail("params (and grads, when given) must hold " + std::to_string(layout.total()) + " values");
  for (std::span<const int> ids : {tokens, targets})
    for (int id : ids)
      if (id < 0 || id >= config.vocab)
        fail("token id " + std::to_string(id) + " outside the vocabulary [0, " + std::to_string(config.vocab) + ")");
}

}  // namespace

double gpt_forward_backward(const GptConfig& config, std::span<const double> params, std::span<const int> tokens,
                            std::span<const int> targets, int B, int T, std::span<double> grads) {
  const ParamLayout layout(config);
  check_inputs(config, layout, params, tokens, targets, B, T, grads);
  const Dims d{static_cast<std::size_t>(B), static_cast<std::size_t>(T), static_cast<std::size_t>(config.channels),
               static_cast<std::size_t>(config.heads), static_cast<std::size_t>(config.vocab)};
  const std::size_t N = d.N(), C = d.C, V = d.V, L = static_cast<std::size_t>(config.layers);
  const auto wte = layout.slice(params, Param::wte);

  // Forward.
  Activations a{.encoded = Vec(N * C), .blocks = {}, .lnf = Vec(N * C), .lnf_mean = Vec(N), .lnf_rstd = Vec(N),
                .logits = Vec(N * V), .probs = Vec(N * V)};
  encoder_forward(a.encoded, tokens, wte, layout.slice(params, Param::wpe), d);
  a.blocks.reserve(L);  // the spans into earlier blocks' outputs stay valid
  for (std::size_t l = 0; l < L; ++l) {
    const In residual = l == 0 ? In(a.encoded) : In(a.blocks.back().residual3);
    a.blocks.emplace_back(d);
    block_forward(a.blocks.back(), residual, block_params(layout, params, static_cast<int>(l)), d);
  }
  const In last = L == 0 ? In(a.encoded) : In(a.blocks.back().residual3);
  layernorm_forward(a.lnf, a.lnf_mean, a.lnf_rstd, last, layout.slice(params, Param::lnfw),
                    layout.slice(params, Param::lnfb), N, C);
  matmul_forward(a.logits, a.lnf, wte, {}, N, C, V);  // tied embeddings: wte is the classifier
  const double loss = crossentropy_forward(a.probs, a.logits, targets, N, V);
  if (grads.empty()) return loss;

  // Backward, the same steps in reverse.
  std::fill(grads.begin(), grads.end(), 0.0);
  const auto dwte = layout.slice(grads, Param::wte);
  Vec dlogits(N * V), dlnf(N * C), dresidual(N * C);
  crossentropy_backward(dlogits, a.probs, targets, N, V);
  matmul_backward(dlnf, dwte, {}, dlogits, a.lnf, wte, N, C, V);
  layernorm_backward(dresidual, layout.slice(grads, Param::lnfw), layout.slice(grads, Param::lnfb), dlnf, last,
                     layout.slice(params, Param::lnfw), a.lnf_mean, a.lnf_rstd, N, C);
  for (std::size_t l = L; l-- > 0;) {
    const In residual = l == 0 ? In(a.encoded) : In(a.blocks[l - 1].residual3);
    const int layer = static_cast<int>(l);
    block_backward(dresidual, block_params(layout, grads, layer), a.blocks[l], residual,
                   block_params(layout, params, layer), d);
  }
  encoder_backward(dwte, layout.slice(grads, Param::wpe), dresidual, tokens, d);
  return loss;
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
}  // namespace

std::vector<double> init_params(const GptConfig& config, std::uint64_t seed) {
  const ParamLayout layout(config);
  std::vector<double> params(layout.total(), 0.0);
  std::mt19937_64 rng(seed);
  const double residual_scale = 1.0 / std::sqrt(2.0 * config.layers);
  auto fill_normal = [&](Param p, double std_dev) {
    for (double& x : layout.slice(std::span<double>(params), p)) x = std_dev * standard_normal(rng);
  };
  auto fill_ones = [&](Param p) {
    for (double& x : layout.slice(std::span<double>(params), p)) x = 1.0;
  };
  fill_normal(Param::wte, 0.02);
  fill_normal(Param::wpe, 0.02);
  fill_ones(Param::ln1w);
  fill_normal(Param::qkvw, 0.02);
  fill_normal(Param::attprojw, 0.02 * residual_scale);
  fill_ones(Param::ln2w);
  fill_normal(Param::fcw, 0.02);
  fill_normal(Param::fcprojw, 0.02 * residual_scale);
  fill_ones(Param::lnfw);
  return params;  // biases stay 0
}

}  // namespace gpuaccept::ddp
