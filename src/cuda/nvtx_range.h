// An NVTX range for the profilers (Nsight Systems), open for the object's lifetime, so a
// step's stages read by name on the timeline. Header-only; the nvtx3 headers come with CUDA.
#pragma once

#include <string>

#include <nvtx3/nvToolsExt.h>

namespace gpuaccept {

struct NvtxRange {
  explicit NvtxRange(const std::string& name) { nvtxRangePushA(name.c_str()); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace gpuaccept
