// JSON as text, never throwing on the strings in it. Strings from the cluster (hostnames, an
// env value, /proc/cpuinfo, a driver's message) can hold any bytes, and nlohmann's dump()
// throws on invalid UTF-8: a phase would lose its results at the gather over one odd byte.
// Here what is not UTF-8 becomes U+FFFD.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace gpuaccept {

inline std::string json_text(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace gpuaccept
