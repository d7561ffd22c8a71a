#include "cuda/arrival_board.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <sstream>
#include <system_error>

#include <fmt/format.h>

#include "common/error.h"

namespace gpuaccept {
namespace fs = std::filesystem;

namespace {

// The whole text of a small file; nullopt when it cannot be opened.
std::optional<std::string> read_small_file(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  char buf[1024];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > 16384) break;
  }
  ::close(fd);
  return text;
}

// Replaces the file's content in one write at offset 0, then truncates to it: a reader
// sees the old or the new line (one small WRITE), never a mix of two heartbeats.
bool write_small_file(const fs::path& p, const std::string& text) {
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  bool ok = ::pwrite(fd, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size());
  ok = ::ftruncate(fd, static_cast<off_t>(text.size())) == 0 && ok;
  ok = ::close(fd) == 0 && ok;  // close: NFS flushes here, and other clients see it on open
  return ok;
}

}  // namespace

ArrivalBoard::ArrivalBoard(fs::path dir, int rank, std::string host)
    : dir_(std::move(dir)), rank_(rank), host_(std::move(host)) {}

fs::path ArrivalBoard::file_for(int rank) const { return dir_ / fmt::format("rank-{:05d}", rank); }

void ArrivalBoard::prepare(bool create_abort_file) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) raise_call_error("libc", "create_directories", fmt::format("{}: {}", dir_.string(), ec.message()));
  if (create_abort_file && !write_small_file(abort_file(), ""))
    raise_call_error("libc", "open", fmt::format("{}: {}", abort_file().string(), errno_text()));
  if (!write_small_file(file_for(rank_), format_line(-1, 0, ::getpid(), host_)))
    raise_call_error("libc", "open", fmt::format("{}: {}", file_for(rank_).string(), errno_text()));
}

std::string ArrivalBoard::format_line(long long progress, double now_unix, long pid, const std::string& host) {
  return fmt::format("{} {:.3f} {} {}\n", progress, now_unix, pid, host.empty() ? "?" : host);
}

ArrivalEntry ArrivalBoard::parse_line(int rank, const std::string& line) {
  ArrivalEntry e;
  e.rank = rank;
  // A complete line ends in '\n'; anything else is a torn or foreign file.
  if (line.empty() || line.back() != '\n') return e;
  std::istringstream in(line);
  if (!(in >> e.progress >> e.heartbeat_unix >> e.pid >> e.host)) return e;
  e.readable = true;
  return e;
}

void ArrivalBoard::write(long long progress, double now_unix) const {
  (void)write_small_file(file_for(rank_), format_line(progress, now_unix, ::getpid(), host_));
}

std::vector<ArrivalEntry> ArrivalBoard::read(const std::vector<int>& ranks) const {
  std::vector<ArrivalEntry> out;
  out.reserve(ranks.size());
  for (const int r : ranks) {
    const auto text = read_small_file(file_for(r));
    out.push_back(text ? parse_line(r, *text) : ArrivalEntry{.rank = r});
  }
  return out;
}

void ArrivalBoard::raise_abort(const std::string& why) const {
  std::string line = why;
  std::replace(line.begin(), line.end(), '\n', ' ');
  (void)write_small_file(abort_file(), line + "\n");
}

std::optional<std::string> ArrivalBoard::abort_reason() const {
  auto text = read_small_file(abort_file());
  if (!text || text->empty() || text->back() != '\n') return std::nullopt;
  text->pop_back();
  return text;
}

void ArrivalBoard::remove() const {
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

std::vector<Laggard> find_laggards(const std::vector<ArrivalEntry>& board, const std::vector<int>& expected,
                                   long long target, double now_unix, double dead_after_s) {
  std::vector<Laggard> out;
  for (const int r : expected) {
    const auto it = std::find_if(board.begin(), board.end(), [r](const ArrivalEntry& e) { return e.rank == r; });
    Laggard l;
    l.rank = r;
    if (it == board.end() || !it->readable) {
      out.push_back(l);  // unknown: reported, since we cannot show it arrived
      continue;
    }
    if (it->progress >= target) continue;
    l.host = it->host;
    l.readable = true;
    l.progress = it->progress;
    l.silent_s = std::max(0.0, now_unix - it->heartbeat_unix);
    l.dead = l.silent_s > dead_after_s;
    out.push_back(l);
  }
  std::sort(out.begin(), out.end(), [](const Laggard& a, const Laggard& b) { return a.rank < b.rank; });
  return out;
}

int first_arrived(const std::vector<ArrivalEntry>& board, const std::vector<int>& expected, long long target) {
  int best = -1;
  for (const auto& e : board) {
    if (!e.readable || e.progress < target) continue;
    if (std::find(expected.begin(), expected.end(), e.rank) == expected.end()) continue;
    if (best < 0 || e.rank < best) best = e.rank;
  }
  return best;
}

std::string describe_laggards(const std::vector<Laggard>& laggards,
                              const std::function<std::string(long long)>& describe_progress) {
  std::string out;
  for (const auto& l : laggards) {
    if (!out.empty()) out += ", ";
    if (!l.readable) {
      out += fmt::format("{} (no arrival file: never started, or the results directory is not shared)", l.rank);
    } else if (l.dead) {
      out += fmt::format("{} ({}, no heartbeat for {:.0f} s: dead?, last at {})", l.rank, l.host, l.silent_s,
                         describe_progress(l.progress));
    } else {
      out += fmt::format("{} ({}, alive, stuck at {})", l.rank, l.host, describe_progress(l.progress));
    }
  }
  return out;
}

std::string describe_fault_laggards(const std::vector<Laggard>& laggards, double waited_s, double dead_after_s,
                                    const std::function<std::string(long long)>& describe_progress) {
  if (laggards.empty())
    return "every rank arrived: the operation itself did not complete (a GPU, NVLink, network or NCCL fault among "
           "these ranks)";
  if (waited_s >= dead_after_s || std::all_of(laggards.begin(), laggards.end(), [](const Laggard& l) { return l.dead; }))
    return "ranks that did not arrive: " + describe_laggards(laggards, describe_progress);
  std::string ranks;
  for (const auto& l : laggards) ranks += fmt::format("{}{}", ranks.empty() ? "" : ", ", l.rank);
  return fmt::format("ranks not yet seen at this point: {} (the failure came {:.1f} s into the wait, too soon to tell a "
                     "dead rank from a live one; a rank's own log line or Slurm's says which ended)",
                     ranks, waited_s);
}

}  // namespace gpuaccept
