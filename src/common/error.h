// One error path for every library the suite calls (CUDA, NCCL, PMIx, HDF5, Slurm,
// NVML, the OS): a failed call becomes a CallError whose message names the call,
// the library's own error text, file:line, and the rank and host it happened on.
#pragma once

#include <source_location>
#include <stdexcept>
#include <string>
#include <string_view>

namespace gpuaccept {

// Thrown for a failed library call. what() is the full, human-readable line.
class CallError : public std::runtime_error {
 public:
  CallError(std::string library, std::string call, std::string detail, std::string where);
  const std::string& library() const { return library_; }
  const std::string& call() const { return call_; }
  const std::string& detail() const { return detail_; }

 private:
  std::string library_, call_, detail_;
};

// Thrown for bad input the operator can fix (a config key, a results file, a flag).
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A failed PMIx call: World's collectives go through PMIx, so on a running job this is a fence
// some other rank or node never joined (died, hung, lost), not a fault of the caller's node.
bool is_world_failure(const std::exception& e);

// "file.cpp:42 rank 3 on node7": where an error happened, for messages.
std::string error_location(const std::source_location& loc);

[[noreturn]] void raise_call_error(std::string_view library, std::string_view call,
                                   std::string_view detail,
                                   const std::source_location& loc = std::source_location::current());

// strerror(errno), for calls that report through errno.
std::string errno_text();

}  // namespace gpuaccept

// POSIX-style calls that return -1 and set errno.
#define GPUACCEPT_CHECK_ERRNO(call)                                                         \
  do {                                                                                      \
    if ((call) == -1) ::gpuaccept::raise_call_error("libc", #call, ::gpuaccept::errno_text()); \
  } while (0)
