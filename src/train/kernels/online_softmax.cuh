// The online softmax the flash attention's forward kernels (on mma.sync and on wgmma, heads of
// 64 and 128) run on a 16-row tile's scores: rows g and g + 8 of the tile are this thread's
// (g = lane / 4; their running max m, in log2 units of the scaled scores, and this thread's
// share l of the row sum), s the raw q k^T of 64 keys in the m16n8 accumulator layout
// (tensor_core.cuh). The tile's output accumulator acc (8ND columns)
// is rescaled to the new max; s becomes p = 2^(s * scale_log2 - m).
#pragma once

#include <cmath>

namespace gpuaccept::train::tc {

template <int ND>
__device__ inline void online_softmax(float (&s)[8][4], float (&acc)[ND][4], float& m0, float& m1, float& l0,
                                      float& l1, float scale_log2) {
  float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
  for (int n = 0; n < 8; ++n) {
    mx0 = fmaxf(mx0, fmaxf(s[n][0], s[n][1]));
    mx1 = fmaxf(mx1, fmaxf(s[n][2], s[n][3]));
  }
  // The four threads of a quad hold one row between them.
  mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
  mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
  mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
  mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
  // Every row sees key 0, so after the first block m is finite; before it, m = -inf and the
  // rescale factors are 0.
  const float n0 = fmaxf(m0, mx0 * scale_log2), n1 = fmaxf(m1, mx1 * scale_log2);
  const float a0 = exp2f(m0 - n0), a1 = exp2f(m1 - n1);
  m0 = n0;
  m1 = n1;
  float r0 = 0.f, r1 = 0.f;
#pragma unroll
  for (int n = 0; n < 8; ++n)
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      s[n][j] = exp2f(fmaf(s[n][j], scale_log2, -m0));  // masked scores are -inf: p = 0
      s[n][2 + j] = exp2f(fmaf(s[n][2 + j], scale_log2, -m1));
      r0 += s[n][j];
      r1 += s[n][2 + j];
    }
  l0 = l0 * a0 + r0;  // the quad adds its shares at the end
  l1 = l1 * a1 + r1;
#pragma unroll
  for (int n = 0; n < ND; ++n) {
    acc[n][0] *= a0, acc[n][1] *= a0;
    acc[n][2] *= a1, acc[n][3] *= a1;
  }
}

}  // namespace gpuaccept::train::tc
