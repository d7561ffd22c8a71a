#include "output/history.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/error.h"

namespace gpuaccept::report {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::vector<std::string> node_names(const std::vector<NodeAction>& list) {
  std::vector<std::string> out;
  for (const auto& a : list) out.push_back(a.node);
  return out;
}

json figure_json(const HeadlineFigure& f) {
  json labels = json::object();
  for (const auto& [k, v] : f.labels) labels[k] = v;
  // An object (what a jq user expects), so read back the labels come in key order.
  return {{"name", f.name}, {"unit", f.unit}, {"labels", labels}, {"value", f.value}};
}

HeadlineFigure figure_from(const json& j) {
  HeadlineFigure f;
  f.name = j.at("name").get<std::string>();
  f.unit = j.value("unit", "");
  f.value = j.at("value").get<double>();
  for (const auto& [k, v] : j.at("labels").items()) f.labels.emplace_back(k, v.get<std::string>());
  return f;
}

HistoryRow row_from(const json& j) {
  HistoryRow r;
  r.run = j.at("run").get<std::string>();
  r.run_dir = j.at("run_dir").get<std::string>();
  r.time = j.value("time", "");
  r.cluster = j.value("cluster", "");
  r.verdict = j.at("verdict").get<std::string>();
  r.nodes = j.value("nodes", std::vector<std::string>{});
  r.drain = j.value("drain", std::vector<std::string>{});
  r.watch = j.value("watch", std::vector<std::string>{});
  for (const auto& f : j.value("figures", json::array())) r.figures.push_back(figure_from(f));
  return r;
}

// An exclusive flock held for one scope (a lock on a file of its own beside the history,
// which the rename never replaces).
class HistoryLock {
 public:
  explicit HistoryLock(const fs::path& lock_file) {
    fd_ = ::open(lock_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0 || ::flock(fd_, LOCK_EX) != 0)
      throw InputError(fmt::format("history lock {}: {}", lock_file.string(), errno_text()));
  }
  ~HistoryLock() { ::close(fd_); }  // closing releases the lock
  HistoryLock(const HistoryLock&) = delete;
  HistoryLock& operator=(const HistoryLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace

HistoryRow history_row(const Report& report, const std::string& run_id, const std::string& cluster) {
  HistoryRow r;
  r.run = run_id;
  r.run_dir = report.run_dir;
  r.time = report.generated_at;
  r.cluster = cluster;
  r.verdict = std::string(verdict_word(report));
  r.nodes = report.grid.nodes;
  r.drain = node_names(report.node_actions.drain);
  r.watch = node_names(report.node_actions.watch);
  r.figures = report.headlines;
  return r;
}

std::string history_line(const HistoryRow& r) {
  json figures = json::array();
  for (const auto& f : r.figures) figures.push_back(figure_json(f));
  const json j = {{"run", r.run},     {"run_dir", r.run_dir}, {"time", r.time},   {"cluster", r.cluster},
                  {"verdict", r.verdict}, {"nodes", r.nodes}, {"drain", r.drain}, {"watch", r.watch},
                  {"figures", figures}};
  // Invalid UTF-8 from a damaged file becomes U+FFFD rather than an exception.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

void append_history(const fs::path& file, const HistoryRow& row) {
  const HistoryLock lock(fs::path(file.string() + ".lock"));
  std::string text;
  if (std::ifstream in(file, std::ios::binary); in) {
    std::ostringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  if (!text.empty() && text.back() != '\n') text += '\n';  // a line cut by an earlier crash stays its own line
  text += history_line(row) + "\n";
  const fs::path tmp = file.parent_path() / fmt::format(".{}.tmp.{}", file.filename().string(), ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw InputError(fmt::format("history {}: cannot write {}: {}", file.string(), tmp.string(), errno_text()));
    }
  }
  std::error_code ec;
  fs::rename(tmp, file, ec);
  if (ec) throw InputError(fmt::format("history {}: cannot rename {} over it: {}", file.string(), tmp.string(), ec.message()));
}

History read_history(const fs::path& file) {
  History h;
  std::ifstream in(file, std::ios::binary);
  if (!in) return h;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    try {
      const json j = json::parse(line);
      if (!j.is_object()) throw std::runtime_error("not a JSON object");
      h.rows.push_back(row_from(j));
    } catch (const std::exception& e) {
      h.problems.push_back(fmt::format("{}:{}: skipped, not a history row ({})", file.string(), n, e.what()));
    }
  }
  return h;
}

std::optional<fs::path> auto_baseline(const History& history, std::vector<std::string> nodes,
                                      const fs::path& exclude_run_dir) {
  std::sort(nodes.begin(), nodes.end());
  const fs::path exclude = exclude_run_dir.lexically_normal();
  for (auto it = history.rows.rbegin(); it != history.rows.rend(); ++it) {
    if (it->verdict != "PASS") continue;
    std::vector<std::string> theirs = it->nodes;
    std::sort(theirs.begin(), theirs.end());
    if (theirs != nodes) continue;
    if (fs::path(it->run_dir).lexically_normal() == exclude) continue;
    if (!fs::is_directory(it->run_dir)) continue;  // moved or deleted since
    return fs::path(it->run_dir);
  }
  return std::nullopt;
}

}  // namespace gpuaccept::report
