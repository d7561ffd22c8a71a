#include "hw/gpudirect.h"

#include <dlfcn.h>

#include <filesystem>

#include <cuda.h>  // CUdevice_attribute, for the enum only: libcuda is loaded with dlopen
#include <fmt/format.h>

namespace gpuaccept {

namespace {

// CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED through the driver API. libcuda is opened rather than
// linked so that a binary built here still starts where the driver is missing (the inventory
// says so instead). Any failure: false.
bool gpu_exports_dmabuf(int cuda_device, std::string& why_not) {
  if (cuda_device < 0) {
    why_not = "no GPU";
    return false;
  }
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);  // the runtime has loaded it already
  if (!lib) lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib) {
    why_not = "libcuda.so.1 not loadable";
    return false;
  }
  using DeviceGet = CUresult (*)(CUdevice*, int);
  using GetAttribute = CUresult (*)(int*, CUdevice_attribute, CUdevice);
  auto device_get = reinterpret_cast<DeviceGet>(dlsym(lib, "cuDeviceGet"));
  auto get_attribute = reinterpret_cast<GetAttribute>(dlsym(lib, "cuDeviceGetAttribute"));
  CUdevice dev = 0;
  int supported = 0;
  bool ok = device_get && get_attribute && device_get(&dev, cuda_device) == CUDA_SUCCESS &&
            get_attribute(&supported, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, dev) == CUDA_SUCCESS;
  if (!ok) why_not = "the driver did not answer CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED";
  else if (!supported) why_not = "the driver reports no dma-buf support (proprietary kernel modules, or a kernel before 5.12)";
  return ok && supported != 0;
}

}  // namespace

GpuDirectSupport read_gpudirect_support(int cuda_device, const std::string& sys_module) {
  GpuDirectSupport g;
  std::error_code ec;
  g.peermem = std::filesystem::exists(std::filesystem::path(sys_module) / "nvidia_peermem", ec);
  std::string why_not_dmabuf;
  g.dmabuf = gpu_exports_dmabuf(cuda_device, why_not_dmabuf);
  g.detail = fmt::format("nvidia_peermem {}; dma-buf {}", g.peermem ? "loaded" : "not loaded",
                         g.dmabuf ? "supported" : why_not_dmabuf);
  return g;
}

void to_json(nlohmann::json& j, const GpuDirectSupport& g) {
  j = {{"peermem", g.peermem}, {"dmabuf", g.dmabuf}, {"possible", g.possible()}, {"detail", g.detail}};
}

}  // namespace gpuaccept
