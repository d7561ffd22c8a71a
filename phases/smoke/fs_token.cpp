#include "smoke/fs_token.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace gpuaccept::smoke {

std::uint64_t fnv1a64(std::string_view data) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const unsigned char c : data) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::filesystem::path token_path(const std::filesystem::path& dir, int rank) {
  return dir / fmt::format("{}.token", rank);
}

std::string encode_token_file(const FsToken& t) {
  const std::string body = fmt::format("rank={}\nhost={}\ntoken={:#018x}\n", t.rank, t.host, t.token);
  return body + fmt::format("checksum={:#018x}\n", fnv1a64(body));
}

std::string write_token_file(const std::filesystem::path& dir, const FsToken& t) {
  const auto path = token_path(dir, t.rank);
  const std::string text = encode_token_file(t);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return fmt::format("{}: {}", path.string(), std::strerror(errno));
  std::string error;
  if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    error = fmt::format("{}: write: {}", path.string(), std::strerror(errno));
  else if (::fsync(fd) != 0)
    error = fmt::format("{}: fsync: {}", path.string(), std::strerror(errno));
  ::close(fd);
  return error;
}

TokenCheck verify_token_file(const std::filesystem::path& path, const FsToken& expected,
                             const std::string& reader_host) {
  const std::string who = fmt::format("{} (rank {})", expected.host, expected.rank);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return {Status::Fail, fmt::format("{} cannot see the file {} wrote: {}: {}", reader_host, who, path.string(),
                                      std::strerror(errno))};
  }
  std::string text;
  char buf[4096];
  ssize_t got = 0;
  while ((got = ::read(fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<std::size_t>(got));
  const int read_errno = errno;
  ::close(fd);
  if (got < 0) {
    return {Status::Fail, fmt::format("{} cannot read the file {} wrote: {}: {}", reader_host, who, path.string(),
                                      std::strerror(read_errno))};
  }
  const auto at = text.rfind("checksum=");
  if (at == std::string::npos || text != encode_token_file(expected)) {
    const bool torn = at == std::string::npos ||
                      fmt::format("checksum={:#018x}\n", fnv1a64(text.substr(0, at))) != text.substr(at);
    return {Status::Fail,
            fmt::format("{} reads other content than {} wrote in {}: {} ({} bytes)", reader_host, who, path.string(),
                        torn ? "checksum mismatch, a torn or partial file" : "a stale or foreign file",
                        text.size())};
  }
  return {Status::Pass, fmt::format("{} read the token {} wrote to {}", reader_host, who, path.string())};
}

int fs_peer_rank(int rank, const std::vector<int>& rank_nodes) {
  if (rank < 0 || rank >= static_cast<int>(rank_nodes.size())) return -1;
  const int nodes = 1 + *std::max_element(rank_nodes.begin(), rank_nodes.end());
  if (nodes < 2) return -1;
  const int my_node = rank_nodes[rank];
  const int local = static_cast<int>(std::count(rank_nodes.begin(), rank_nodes.begin() + rank, my_node));
  const int next = (my_node + 1) % nodes;
  int first = -1, seen = 0;
  for (int r = 0; r < static_cast<int>(rank_nodes.size()); ++r) {
    if (rank_nodes[r] != next) continue;
    if (first < 0) first = r;
    if (seen++ == local) return r;
  }
  return first;
}

}  // namespace gpuaccept::smoke
