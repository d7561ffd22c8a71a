#include "cuda/library_versions.h"

#include <dlfcn.h>

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <hdf5.h>
#include <nccl.h>
#include <pmix.h>
#include <slurm/slurm.h>

#include "cuda/nccl_comm.h"
#include "world/world.h"

namespace gpuaccept {

namespace {

// The shared object that defines `symbol`, as the dynamic loader found it.
std::string path_of(const void* symbol) {
  Dl_info info{};
  if (symbol == nullptr || dladdr(symbol, &info) == 0 || info.dli_fname == nullptr) return "";
  return info.dli_fname;
}

std::string cuda_version_text(int v) { return v > 0 ? fmt::format("{}.{}", v / 1000, (v % 1000) / 10) : ""; }

}  // namespace

std::vector<LibraryVersion> library_versions() {
  std::vector<LibraryVersion> out;
  out.push_back({"nccl", fmt::format("{}.{}.{}", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), nccl_version(),
                 path_of(reinterpret_cast<const void*>(&ncclGetVersion))});

  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);  // failures leave 0: "" below
  cudaDriverGetVersion(&driver);
  out.push_back({"cuda_runtime", cuda_version_text(CUDART_VERSION), cuda_version_text(runtime),
                 path_of(reinterpret_cast<const void*>(&cudaRuntimeGetVersion))});
  // The newest CUDA the installed driver runs: a runtime newer than this cannot start.
  out.push_back({"cuda_driver", "", cuda_version_text(driver), ""});

  out.push_back({"pmix", fmt::format("{}.{}.{}", PMIX_VERSION_MAJOR, PMIX_VERSION_MINOR, PMIX_VERSION_RELEASE),
                 pmix_version(), path_of(reinterpret_cast<const void*>(&PMIx_Get_version))});

  unsigned maj = 0, min = 0, rel = 0;
  H5get_libversion(&maj, &min, &rel);
  out.push_back({"hdf5", fmt::format("{}.{}.{}", H5_VERS_MAJOR, H5_VERS_MINOR, H5_VERS_RELEASE),
                 fmt::format("{}.{}.{}", maj, min, rel), path_of(reinterpret_cast<const void*>(&H5get_libversion))});

  // libslurm's soname changes with every major release, so the loaded library is of the
  // release compiled against; its API number and path say which install it is.
  const long api = slurm_api_version();
  out.push_back({"slurm",
                 fmt::format("{}.{:02d}.{}", SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER),
                             SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER), SLURM_VERSION_MICRO(SLURM_VERSION_NUMBER)),
                 fmt::format("api {}.{}.{}", SLURM_VERSION_MAJOR(api), SLURM_VERSION_MINOR(api), SLURM_VERSION_MICRO(api)),
                 path_of(reinterpret_cast<const void*>(&slurm_api_version))});
  return out;
}

void to_json(nlohmann::json& j, const LibraryVersion& v) {
  j = {{"name", v.name}, {"compiled", v.compiled}, {"loaded", v.loaded}, {"path", v.path}};
}

}  // namespace gpuaccept
