// The cluster-facing libraries of this process: the version each was compiled against (its
// header's macros), the version loaded at run time (its own call) and the file the dynamic
// loader took it from (dladdr), for discover's inventory. A build against one install that
// loads another (LD_LIBRARY_PATH, a module system, a vendor's NCCL) shows here by name.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpuaccept {

struct LibraryVersion {
  std::string name;      // "nccl", "cuda_runtime", "cuda_driver", "pmix", "hdf5", "slurm"
  std::string compiled;  // "2.28.3"; "" when the library has no compile-time version (the driver)
  std::string loaded;    // "2.28.3"; "" when unknown
  std::string path;      // the shared object it came from; "" when linked statically or unknown
};

std::vector<LibraryVersion> library_versions();

void to_json(nlohmann::json& j, const LibraryVersion& v);

}  // namespace gpuaccept
