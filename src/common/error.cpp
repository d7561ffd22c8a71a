#include "common/error.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "common/log.h"

namespace gpuaccept {

CallError::CallError(std::string library, std::string call, std::string detail, std::string where)
    : std::runtime_error(fmt::format("{} call {} failed: {} (at {})", library, call, detail, where)),
      library_(std::move(library)),
      call_(std::move(call)),
      detail_(std::move(detail)) {}

std::string error_location(const std::source_location& loc) {
  const auto& ctx = log_context();
  return fmt::format("{}:{} rank {} on {}", std::filesystem::path(loc.file_name()).filename().string(),
                     loc.line(), ctx.rank < 0 ? std::string("?") : std::to_string(ctx.rank), ctx.host);
}

void raise_call_error(std::string_view library, std::string_view call, std::string_view detail,
                      const std::source_location& loc) {
  throw CallError(std::string(library), std::string(call), std::string(detail), error_location(loc));
}

std::string errno_text() { return std::strerror(errno); }

bool is_world_failure(const std::exception& e) {
  const auto* call = dynamic_cast<const CallError*>(&e);
  return call != nullptr && call->library() == "PMIx";
}

}  // namespace gpuaccept
