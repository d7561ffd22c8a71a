// Which GPU of its node a GPU is, numbered as nvidia-smi numbers them on the node: its place in
// PCI bus order among all the node's NVIDIA GPUs. A rank that Slurm binds to one GPU sees it as
// CUDA device 0, and where Slurm constrains devices NVML numbers only the job's GPUs too, so
// neither index tells an operator which card to look at: on four H100s under Slurm every rank's
// smoke records said "GPU 0" (2026-11-26). The driver's /proc/driver/nvidia/gpus lists every GPU
// of the node, one directory per PCI address, whatever the job may open.
#pragma once

#include <compare>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace gpuaccept {

inline const std::filesystem::path kDriverGpusDir = "/proc/driver/nvidia/gpus";

struct PciAddress {
  unsigned long domain = 0, bus = 0, device = 0, function = 0;
  auto operator<=>(const PciAddress&) const = default;
};

// "0000:00:06.0" (CUDA, the driver's directories) or "00000000:00:06.0" (NVML), any case;
// nullopt for anything else.
std::optional<PciAddress> parse_pci_address(std::string_view text);
// Whether two spellings name one PCI device (NVML's 8-digit domain against CUDA's 4, any case);
// false when either is no address.
bool same_pci_address(std::string_view a, std::string_view b);

// The place of `pci_bus_id` among the PCI addresses named in `gpus_dir`, in PCI order; nullopt
// when the directory cannot be read or does not name it.
std::optional<int> node_gpu_index(const std::string& pci_bus_id, const std::filesystem::path& gpus_dir = kDriverGpusDir);

// The index a record names for the GPU at `pci_bus_id`: node_gpu_index, else NVML's index
// (the node's numbering where no device constraint hides GPUs), else CUDA's (this rank's own
// numbering: the last resort); -1 when none is known.
int record_gpu_index(const std::string& pci_bus_id, int nvml_index, int cuda_index,
                     const std::filesystem::path& gpus_dir = kDriverGpusDir);

}  // namespace gpuaccept
