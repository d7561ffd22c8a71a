#include "results/heartbeat.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace gpuaccept {
namespace fs = std::filesystem;

namespace {
// What Heartbeat::stop() writes into a rank's file: it ended, it did not hang.
constexpr char kEndedMark[] = "ended\n";
}  // namespace

double heartbeat_period_s() {
  if (const char* v = std::getenv("GPUACCEPT_HEARTBEAT")) {
    char* end = nullptr;
    const double t = std::strtod(v, &end);
    if (end != v) return t;
  }
  return 10.0;
}

Heartbeat::Heartbeat(fs::path file, double period_s) : file_(std::move(file)) {
  if (period_s <= 0) return;
  thread_ = std::thread([this, period_s] {
    std::unique_lock lk(mu_);
    for (bool first = true; !stop_; first = false) {
      beat(first);
      cv_.wait_for(lk, std::chrono::duration<double>(period_s), [this] { return stop_; });
    }
  });
}

Heartbeat::~Heartbeat() { stop(); }

void Heartbeat::stop() {
  {
    std::lock_guard lk(mu_);
    if (stop_) return;
    stop_ = true;
  }
  cv_.notify_all();
  if (!thread_.joinable()) return;  // heartbeats off
  thread_.join();
  // The rank ended on its own: its heartbeat stopped, but it did not hang. Never recreates the
  // file (rank 0 may have removed the parts already).
  const int fd = ::open(file_.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) return;
  const ssize_t n = ::write(fd, kEndedMark, sizeof kEndedMark - 1);
  (void)n;  // best effort, as every beat
  ::close(fd);
}

// Best effort: a full or read-only filesystem only costs the heartbeat. Only the first beat
// creates the file (and the parts directory): once rank 0 has written the phase file and removed
// the parts, a later beat of another rank must not bring them back.
void Heartbeat::beat(bool first) const {
  if (::utimensat(AT_FDCWD, file_.c_str(), nullptr, 0) == 0 || !first) return;
  std::error_code ec;
  fs::create_directories(file_.parent_path(), ec);
  const int fd = ::open(file_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) ::close(fd);
}

namespace {

bool ended(const fs::path& file) {
  char head[sizeof kEndedMark - 1] = {};
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const ssize_t n = ::read(fd, head, sizeof head);
  ::close(fd);
  return n == static_cast<ssize_t>(sizeof head) && std::memcmp(head, kEndedMark, sizeof head) == 0;
}

struct Beat {
  double mtime = 0;  // seconds since the epoch
  bool ended = false;
};

// rank -> its rank-NNNNN.alive.
std::map<int, Beat> heartbeats(const fs::path& parts_dir) {
  std::map<int, Beat> beat;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(parts_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!name.starts_with("rank-") || e.path().extension() != ".alive") continue;
    struct stat st {};
    if (::stat(e.path().c_str(), &st) != 0) continue;
    const int rank = std::atoi(name.c_str() + 5);
    beat[rank] = {static_cast<double>(st.st_mtim.tv_sec) + st.st_mtim.tv_nsec * 1e-9, ended(e.path())};
  }
  return beat;
}

}  // namespace

double newest_heartbeat_age_s(const fs::path& parts_dir) {
  const std::map<int, Beat> beat = heartbeats(parts_dir);
  if (beat.empty()) return -1;
  double newest = 0;
  for (const auto& [r, b] : beat) newest = std::max(newest, b.mtime);
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  return std::max(0.0, now - newest);
}

std::vector<SilentRank> silent_ranks(const fs::path& parts_dir, const std::vector<Record>& records, double period_s) {
  std::vector<SilentRank> out;
  if (period_s <= 0) return out;
  const std::map<int, Beat> beat = heartbeats(parts_dir);
  if (beat.size() < 2) return out;
  double newest = 0;
  for (const auto& [r, b] : beat) newest = std::max(newest, b.mtime);
  const double limit = std::max(3.0 * period_s, 3.0);
  for (const auto& [rank, b] : beat) {
    const double t = b.mtime;
    if (b.ended || newest - t <= limit) continue;
    std::string node;
    for (const auto& rec : records)
      if (rec.rank == rank && !rec.node.empty()) node = rec.node;
    out.push_back({rank, node, newest - t});
  }
  return out;
}

std::string describe(const SilentRank& s) {
  return fmt::format("rank {}{}: its heartbeat stopped {:.0f} s before the last rank's (hung or stopped, or its node lost)",
                     s.rank, s.node.empty() ? "" : fmt::format(" ({})", s.node), s.behind_s);
}

Record silent_rank_record(const SilentRank& s, const std::string& phase) {
  Record r;
  r.phase = phase;
  r.rank = s.rank;
  r.node = s.node;
  r.test = "result_gather";
  r.status = Status::Error;
  r.message = describe(s) + "; the other ranks gave up waiting for it";
  return r;
}

}  // namespace gpuaccept
