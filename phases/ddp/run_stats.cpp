#include "ddp/run_stats.h"

#include <cmath>

namespace gpuaccept::ddp {

double learning_threshold(int vocab, double floor, double fraction) {
  const double ln_v = std::log(static_cast<double>(vocab));
  return ln_v - fraction * (ln_v - floor);
}

}  // namespace gpuaccept::ddp
