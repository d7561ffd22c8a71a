// Causal grouped-query attention and its backward in double (float64 loops), the yardstick of
// the flash kernels (train/flash_attention_kernels.h) in flash-attention-tests and of fsdp-lora's
// attention classes in fsdp-model-tests. Token-major: q, dy, y, dq (B, T, NH, HD), k, v, dk, dv
// (B, T, NKV, HD); query head h reads key/value head h / (NH / NKV).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace gpuaccept::test {

struct AttentionGrads {
  std::vector<double> y, dq, dk, dv;
};
inline AttentionGrads attention_reference(const std::vector<double>& q, const std::vector<double>& k,
                                          const std::vector<double>& v, const std::vector<double>& dy, int B, int T,
                                          int NH, int NKV, int HD) {
  AttentionGrads r;
  r.y.assign(q.size(), 0.0);
  r.dq.assign(q.size(), 0.0);
  r.dk.assign(k.size(), 0.0);
  r.dv.assign(v.size(), 0.0);
  const int G = NH / NKV;
  const double scale = 1.0 / std::sqrt(static_cast<double>(HD));
  auto qat = [&](int b, int t, int h) {
    return (static_cast<std::size_t>(b) * T + t) * NH * HD + static_cast<std::size_t>(h) * HD;
  };
  auto kat = [&](int b, int t, int h) {
    return (static_cast<std::size_t>(b) * T + t) * NKV * HD + static_cast<std::size_t>(h) * HD;
  };
  std::vector<double> p(static_cast<std::size_t>(T)), dp(static_cast<std::size_t>(T));
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h) {
      const int kh = h / G;
      for (int t1 = 0; t1 < T; ++t1) {
        const std::size_t qi = qat(b, t1, h);
        double mx = -INFINITY;
        for (int t2 = 0; t2 <= t1; ++t2) {
          double s = 0;
          const std::size_t ki = kat(b, t2, kh);
          for (int d = 0; d < HD; ++d) s += q[qi + d] * k[ki + d];
          p[t2] = s * scale;
          mx = std::max(mx, p[t2]);
        }
        double sum = 0;
        for (int t2 = 0; t2 <= t1; ++t2) sum += (p[t2] = std::exp(p[t2] - mx));
        for (int t2 = 0; t2 <= t1; ++t2) p[t2] /= sum;
        for (int t2 = 0; t2 <= t1; ++t2) {
          const std::size_t ki = kat(b, t2, kh);
          for (int d = 0; d < HD; ++d) r.y[qi + d] += p[t2] * v[ki + d];
        }
        // dP = dy v^T, dS = P (dP - sum_t2 P dP); dq = scale dS k, dk += scale dS^T q, dv += P^T dy
        double dsum = 0;
        for (int t2 = 0; t2 <= t1; ++t2) {
          double s = 0;
          const std::size_t ki = kat(b, t2, kh);
          for (int d = 0; d < HD; ++d) s += dy[qi + d] * v[ki + d];
          dp[t2] = s;
          dsum += p[t2] * s;
        }
        for (int t2 = 0; t2 <= t1; ++t2) {
          const double ds = p[t2] * (dp[t2] - dsum) * scale;
          const std::size_t ki = kat(b, t2, kh);
          for (int d = 0; d < HD; ++d) {
            r.dq[qi + d] += ds * k[ki + d];
            r.dk[ki + d] += ds * q[qi + d];
            r.dv[ki + d] += p[t2] * dy[qi + d];
          }
        }
      }
    }
  return r;
}

}  // namespace gpuaccept::test
