#include "smoke/xid_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <regex>

#include <fmt/format.h>

namespace gpuaccept::smoke {

std::vector<XidEvent> parse_xid_lines(std::string_view log) {
  static const std::regex xid_re(R"(NVRM: Xid \(PCI:([0-9A-Fa-f:.]+)\): (\d+))");
  std::vector<XidEvent> out;
  std::size_t start = 0;
  while (start < log.size()) {
    std::size_t end = log.find('\n', start);
    if (end == std::string_view::npos) end = log.size();
    const std::string line(log.substr(start, end - start));
    std::smatch m;
    if (std::regex_search(line, m, xid_re)) {
      XidEvent e;
      e.pci = m[1].str();
      try {
        e.xid = std::stoi(m[2].str());
      } catch (const std::exception&) {
        e.xid = -1;
      }
      e.line = line.substr(static_cast<std::size_t>(m.position(0)));
      out.push_back(std::move(e));
    }
    start = end + 1;
  }
  return out;
}

std::optional<std::string_view> critical_xid(int xid) {
  // NVIDIA's XID catalogue: errors of the GPU, its memory or its links, not of a program.
  static const std::map<int, std::string_view> critical = {
      {48, "double-bit ECC error"},
      {61, "internal micro-controller breakpoint"},
      {62, "internal micro-controller halt"},
      {64, "ECC page retirement or row remapping failure"},
      {74, "NVLink error"},
      {79, "GPU has fallen off the bus"},
      {92, "high single-bit ECC error rate"},
      {94, "contained ECC error"},
      {95, "uncontained ECC error"},
      {119, "GSP RPC timeout"},
      {120, "GSP error"},
      {140, "unrecovered ECC error"},
  };
  const auto it = critical.find(xid);
  if (it == critical.end()) return std::nullopt;
  return it->second;
}

std::string read_kernel_log(std::string& error) {
  // /dev/kmsg gives one record per read(); O_NONBLOCK ends the loop at the buffer's end
  // (EAGAIN) instead of waiting for the next message.
  const int fd = ::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    error = fmt::format("/dev/kmsg: {}", std::strerror(errno));
    return {};
  }
  std::string text;
  char buf[8192];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      text.append(buf, static_cast<std::size_t>(n));
      if (text.back() != '\n') text += '\n';
      continue;
    }
    if (n < 0 && errno == EPIPE) continue;  // a record was overwritten while reading: go on
    if (n < 0 && errno != EAGAIN) error = fmt::format("/dev/kmsg: {}", std::strerror(errno));
    break;
  }
  ::close(fd);
  return text;
}

}  // namespace gpuaccept::smoke
