#include "cuda/cuda_check.h"

#include <string>

namespace gpuaccept {

std::string nccl_error_text(ncclResult_t rc) {
  std::string text = ncclGetErrorString(rc);
  if (const char* last = ncclGetLastError(nullptr); last && *last) text += std::string(": ") + last;
  return text;
}

}  // namespace gpuaccept
