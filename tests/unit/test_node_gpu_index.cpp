// hw/node_gpu_index.h: a GPU's index on its node is its place in PCI order among the GPUs the
// driver lists, whatever CUDA or NVML call it inside a job.
#include <catch2/catch.hpp>

#include <filesystem>

#include "fresh_dir.h"
#include "hw/node_gpu_index.h"

using namespace gpuaccept;
namespace fs = std::filesystem;

TEST_CASE("PCI addresses parse in CUDA's, NVML's and the driver's spellings", "[hw]") {
  const auto cuda = parse_pci_address("0000:1B:00.0");
  const auto nvml = parse_pci_address("00000000:1b:00.0");
  REQUIRE(cuda);
  REQUIRE(nvml);
  CHECK(*cuda == *nvml);
  CHECK(cuda->bus == 0x1b);
  CHECK(parse_pci_address("0001:00:06.1")->domain == 1);
  CHECK(parse_pci_address("0000:00:06.1")->function == 1);
  for (const char* bad : {"", "GPU-1234", "0000:1b:00", "0000:1b.00.0", "0000::00.0", "zz00:1b:00.0", "0000:1b:00.0x"})
    CHECK_FALSE(parse_pci_address(bad));
  CHECK(same_pci_address("00000000:1B:00.0", "0000:1b:00.0"));
  CHECK_FALSE(same_pci_address("0000:1b:00.0", "0000:1c:00.0"));
  CHECK_FALSE(same_pci_address("0001:1b:00.0", "0000:1b:00.0"));  // another PCI domain
  CHECK_FALSE(same_pci_address("", ""));
}

TEST_CASE("the node index is the place in PCI order among the driver's GPUs", "[hw]") {
  const fs::path gpus = testing::fresh_dir("node-gpu-index");
  // Created out of order, one of them on a higher bus than the lexical order of its name's
  // digits would put it (0x1b < 0x9a < 0xdb), and one thing that is no PCI address.
  for (const char* bus : {"0000:db:00.0", "0000:1b:00.0", "0000:9a:00.0", "0000:4c:00.0"}) fs::create_directory(gpus / bus);
  fs::create_directory(gpus / "README");
  CHECK(node_gpu_index("0000:1b:00.0", gpus) == 0);
  CHECK(node_gpu_index("00000000:4C:00.0", gpus) == 1);  // NVML's spelling
  CHECK(node_gpu_index("0000:9a:00.0", gpus) == 2);
  CHECK(node_gpu_index("0000:db:00.0", gpus) == 3);
  CHECK_FALSE(node_gpu_index("0000:aa:00.0", gpus));  // not one of the node's GPUs
  CHECK_FALSE(node_gpu_index("not an address", gpus));
  CHECK_FALSE(node_gpu_index("0000:1b:00.0", gpus / "missing"));

  SECTION("a rank bound to one GPU (CUDA and NVML both say 0) names the node's index") {
    CHECK(record_gpu_index("0000:9a:00.0", 0, 0, gpus) == 2);
  }
  SECTION("without the driver's list: NVML's index, else CUDA's") {
    CHECK(record_gpu_index("0000:9a:00.0", 5, 0, gpus / "missing") == 5);
    CHECK(record_gpu_index("0000:9a:00.0", -1, 1, gpus / "missing") == 1);
    CHECK(record_gpu_index("", -1, -1, gpus / "missing") == -1);
  }
  fs::remove_all(gpus);
}
