// What NCCL ran with, per rank, for the results file's `nccl_env` document: the library
// and header versions, blocking mode, every NCCL_* variable in the environment, and the
// NCCL config files NCCL reads at init (NCCL_CONF_FILE, ~/.nccl.conf, /etc/nccl.conf), which
// can set the same parameters without any variable.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace gpuaccept::nccl_scaling {

// Every NCCL_* variable in this process's environment.
std::map<std::string, std::string> nccl_environment();

// Name -> text of each NCCL config file present.
std::map<std::string, std::string> nccl_config_files();

// The NCCL the headers were compiled against: "2.28.9".
std::string nccl_header_version();

}  // namespace gpuaccept::nccl_scaling
