// memory_available_bytes (hw/host_inventory.h): MemAvailable from /proc/meminfo, in bytes, and 0
// for a file that is missing, lacks the line or is malformed (the caller then refuses to pin).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "fresh_dir.h"
#include "hw/host_inventory.h"

using gpuaccept::memory_available_bytes;
namespace fs = std::filesystem;

TEST_CASE("MemAvailable is read in bytes; a missing or malformed meminfo gives 0") {
  CHECK(memory_available_bytes() > 0);  // this machine's
  const fs::path dir = gpuaccept::testing::fresh_dir("meminfo");
  const auto write = [&](const char* text) {
    std::ofstream(dir / "meminfo") << text;
    return (dir / "meminfo").string();
  };
  CHECK(memory_available_bytes(write("MemTotal:       24000000 kB\nMemFree:        1000 kB\nMemAvailable:   2048 kB\n")) ==
        2048ull * 1024);
  CHECK(memory_available_bytes(write("MemTotal:       24000000 kB\nMemFree:        1000 kB\n")) == 0);
  CHECK(memory_available_bytes(write("MemAvailable:   lots kB\n")) == 0);
  CHECK(memory_available_bytes(write("MemAvailable:   2048 MB\n")) == 0);
  CHECK(memory_available_bytes((dir / "absent").string()) == 0);
  fs::remove_all(dir);
}
