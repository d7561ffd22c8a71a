// The element types the sweep runs: float (nccl-tests' default) and bf16 (what training
// reduces). Names: "float"/"bf16" in records and flags, nccl-tests' own in the table.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include <nccl.h>

namespace gpuaccept::nccl_scaling {

enum class Dtype { Float, Bf16 };

struct DtypeInfo {
  std::string_view name;        // records, flags, config: "float", "bf16"
  std::string_view table_name;  // nccl-tests' type column: "float", "bfloat16"
  std::size_t size;
  ncclDataType_t nccl;
};

inline DtypeInfo info(Dtype d) {
  switch (d) {
    case Dtype::Float: return {"float", "float", 4, ncclFloat32};
    case Dtype::Bf16: return {"bf16", "bfloat16", 2, ncclBfloat16};
  }
  return {"?", "?", 1, ncclInt8};
}

inline std::optional<Dtype> parse_dtype(std::string_view s) {
  if (s == "float" || s == "fp32" || s == "float32") return Dtype::Float;
  if (s == "bf16" || s == "bfloat16") return Dtype::Bf16;
  return std::nullopt;
}

}  // namespace gpuaccept::nccl_scaling
