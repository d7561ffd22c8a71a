// A new, empty directory under the system's temp directory for one unit test's files,
// named after the test and this process (parallel ctest runs do not share it).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

namespace gpuaccept::testing {

inline std::filesystem::path fresh_dir(const std::string& name) {
  const std::filesystem::path d =
      std::filesystem::temp_directory_path() / ("gpuaccept-unit-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

}  // namespace gpuaccept::testing
