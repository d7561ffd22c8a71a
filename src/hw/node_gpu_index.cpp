#include "hw/node_gpu_index.h"

#include <algorithm>
#include <charconv>
#include <system_error>
#include <vector>

namespace gpuaccept {

namespace {

// One hexadecimal field of `text` up to `end` (or the whole rest); advances `text` past it.
std::optional<unsigned long> hex_field(std::string_view& text, char end) {
  const std::size_t stop = end ? text.find(end) : text.size();
  if (stop == std::string_view::npos || stop == 0) return std::nullopt;
  unsigned long v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + stop, v, 16);
  if (ec != std::errc{} || ptr != text.data() + stop) return std::nullopt;
  text.remove_prefix(end ? stop + 1 : stop);
  return v;
}

}  // namespace

std::optional<PciAddress> parse_pci_address(std::string_view text) {
  PciAddress a;
  const auto domain = hex_field(text, ':');
  const auto bus = domain ? hex_field(text, ':') : std::nullopt;
  const auto device = bus ? hex_field(text, '.') : std::nullopt;
  const auto function = device ? hex_field(text, '\0') : std::nullopt;
  if (!function) return std::nullopt;
  return PciAddress{*domain, *bus, *device, *function};
}

bool same_pci_address(std::string_view a, std::string_view b) {
  const auto x = parse_pci_address(a), y = parse_pci_address(b);
  return x && y && *x == *y;
}

std::optional<int> node_gpu_index(const std::string& pci_bus_id, const std::filesystem::path& gpus_dir) {
  const std::optional<PciAddress> mine = parse_pci_address(pci_bus_id);
  if (!mine) return std::nullopt;
  std::vector<PciAddress> all;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(gpus_dir, ec), end; !ec && it != end; it.increment(ec))
    if (const auto a = parse_pci_address(it->path().filename().string())) all.push_back(*a);
  if (ec) return std::nullopt;
  std::sort(all.begin(), all.end());
  const auto at = std::find(all.begin(), all.end(), *mine);
  if (at == all.end()) return std::nullopt;
  return static_cast<int>(at - all.begin());
}

int record_gpu_index(const std::string& pci_bus_id, int nvml_index, int cuda_index,
                     const std::filesystem::path& gpus_dir) {
  if (const auto i = node_gpu_index(pci_bus_id, gpus_dir)) return *i;
  return nvml_index >= 0 ? nvml_index : cuda_index;
}

}  // namespace gpuaccept
