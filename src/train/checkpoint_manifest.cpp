#include "train/checkpoint_manifest.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_text.h"
#include "results/unique_fd.h"

namespace gpuaccept::train {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kFormat = "gpuaccept-checkpoint";

// A file name the manifest may name: one plain component, so that a damaged or hostile
// manifest cannot send a restore outside its directory.
bool plain_file_name(const std::string& s) {
  return !s.empty() && s != "." && s != ".." && s.find('/') == std::string::npos && s.find('\0') == std::string::npos;
}

class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw InputError(fmt::format("{}: {}: {}", source_, key, what));
  }
  const json& at(const json& obj, const std::string& key, const std::string& where) const {
    if (!obj.is_object() || !obj.contains(key)) fail(where + key, "missing");
    return obj.at(key);
  }
  std::string str(const json& obj, const std::string& key, const std::string& where) const {
    const json& v = at(obj, key, where);
    if (!v.is_string()) fail(where + key, "expected a string");
    return v.get<std::string>();
  }
  std::uint64_t u64(const json& obj, const std::string& key, const std::string& where) const {
    const json& v = at(obj, key, where);
    if (!v.is_number_unsigned()) fail(where + key, "expected a non-negative integer");
    return v.get<std::uint64_t>();
  }
  int small_int(const json& obj, const std::string& key, const std::string& where, int min) const {
    const std::uint64_t v = u64(obj, key, where);
    if (v > 100'000'000 || static_cast<int>(v) < min) fail(where + key, fmt::format("{} out of range", v));
    return static_cast<int>(v);
  }
  const json& array(const json& obj, const std::string& key, const std::string& where) const {
    const json& v = at(obj, key, where);
    if (!v.is_array()) fail(where + key, "expected a list");
    return v;
  }

 private:
  std::string source_;
};

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void fsync_path(const fs::path& p, int flags) {
  UniqueFd fd(::open(p.c_str(), flags | O_CLOEXEC));
  if (fd.get() < 0) raise_call_error("libc", "open", fmt::format("{}: {}", p.string(), std::strerror(errno)));
  if (::fsync(fd.get()) != 0) raise_call_error("libc", "fsync", fmt::format("{}: {}", p.string(), std::strerror(errno)));
}

// Which ranks' files an unfinished save left: each file's metadata holds the world size, so
// the ranks that did not finish can be named. ": rank files 0-2 of 4 there, missing: 3".
std::string describe_rank_files(const fs::path& dir) {
  std::error_code ec;
  std::vector<int> present;
  int world = 0;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() != 22 || name.rfind("rank-", 0) != 0 || !name.ends_with(".safetensors")) continue;
    try {
      const SafetensorsFile f(e.path());
      const int rank = std::stoi(f.metadata().at("rank"));
      world = std::max(world, std::stoi(f.metadata().at("world_size")));
      present.push_back(rank);
    } catch (const std::exception&) {
      // A partial file (the writer died in it) does not count as its rank's.
    }
  }
  if (world == 0) return "; no complete rank file";
  std::sort(present.begin(), present.end());
  std::vector<int> missing;
  for (int r = 0; r < world; ++r)
    if (!std::binary_search(present.begin(), present.end(), r)) missing.push_back(r);
  return fmt::format("; {} of {} ranks' files there, missing: {}", present.size(), world,
                     missing.empty() ? std::string("none (rank 0 did not write the manifest)") : fmt::format("{}", fmt::join(missing, ", ")));
}

}  // namespace

const StateTensorInfo* CheckpointManifest::find_tensor(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

std::string manifest_json(const CheckpointManifest& m) {
  json j;
  j["format"] = kFormat;
  j["version"] = kCheckpointFormatVersion;
  j["phase"] = m.phase;
  j["step"] = m.step;
  j["world_size"] = m.world_size;
  j["created"] = m.created.empty() ? utc_now() : m.created;
  j["job"] = m.job;
  j["state"] = m.state;
  j["tensors"] = json::array();
  for (const auto& t : m.tensors) j["tensors"].push_back({{"name", t.name}, {"dtype", dtype_name(t.dtype)}, {"elements", t.elements}});
  j["files"] = json::array();
  for (const auto& f : m.files) {
    json slices = json::array();
    for (const auto& s : f.slices)
      slices.push_back({{"name", s.name}, {"first", s.first}, {"count", s.count}, {"xxh3", fmt::format("{:016x}", s.xxh3)}});
    j["files"].push_back({{"rank", f.rank}, {"host", f.host}, {"file", f.file}, {"bytes", f.bytes}, {"slices", slices}});
  }
  return json_text(j);
}

CheckpointManifest parse_manifest(const std::string& text, const std::string& source) {
  const Reader r(source);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw InputError(fmt::format("{}: not JSON: {}", source, e.what()));
  }
  if (!j.is_object()) r.fail("(top)", "expected an object");
  if (r.str(j, "format", "") != kFormat) r.fail("format", fmt::format("not '{}': not a gpuaccept checkpoint", kFormat));
  if (r.u64(j, "version", "") != kCheckpointFormatVersion)
    r.fail("version", fmt::format("{}: this build reads version {}", j.at("version").dump(), kCheckpointFormatVersion));
  CheckpointManifest m;
  m.phase = r.str(j, "phase", "");
  m.step = r.small_int(j, "step", "", 0);
  m.world_size = r.small_int(j, "world_size", "", 1);
  m.created = r.str(j, "created", "");
  m.job = r.str(j, "job", "");
  const json& state = r.at(j, "state", "");
  if (!state.is_object()) r.fail("state", "expected an object");
  for (const auto& [k, v] : state.items()) {
    if (!v.is_string()) r.fail("state." + k, "expected a string");
    m.state[k] = v.get<std::string>();
  }
  for (const json& t : r.array(j, "tensors", "")) {
    StateTensorInfo info;
    info.name = r.str(t, "name", "tensors[].");
    const auto d = dtype_from_name(r.str(t, "dtype", "tensors[]."));
    if (!d) r.fail("tensors[" + info.name + "].dtype", "not a safetensors dtype");
    info.dtype = *d;
    info.elements = r.u64(t, "elements", "tensors[" + info.name + "].");
    if (m.find_tensor(info.name)) r.fail("tensors", "'" + info.name + "' listed twice");
    m.tensors.push_back(info);
  }
  // Per tensor: the slices of all files, to check they cover it exactly once.
  std::map<std::string, std::vector<std::pair<std::uint64_t, std::uint64_t>>> covered;
  for (const json& f : r.array(j, "files", "")) {
    RankFile rf;
    rf.rank = r.small_int(f, "rank", "files[].", 0);
    const std::string where = fmt::format("files[rank {}].", rf.rank);
    rf.host = r.str(f, "host", where);
    rf.file = r.str(f, "file", where);
    if (!plain_file_name(rf.file)) r.fail(where + "file", fmt::format("'{}' is not a plain file name", rf.file));
    rf.bytes = r.u64(f, "bytes", where);
    for (const json& s : r.array(f, "slices", where)) {
      FileSlice fs_;
      fs_.name = r.str(s, "name", where + "slices[].");
      const StateTensorInfo* t = m.find_tensor(fs_.name);
      if (!t) r.fail(where + "slices", fmt::format("'{}' is not among the manifest's tensors", fs_.name));
      fs_.first = r.u64(s, "first", where + fs_.name + ".");
      fs_.count = r.u64(s, "count", where + fs_.name + ".");
      if (fs_.first > t->elements || fs_.count > t->elements - fs_.first)
        r.fail(where + fs_.name, fmt::format("elements [{}, +{}) outside the tensor's {}", fs_.first, fs_.count, t->elements));
      const std::string hex = r.str(s, "xxh3", where + fs_.name + ".");
      std::size_t used = 0;
      try {
        fs_.xxh3 = std::stoull(hex, &used, 16);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != hex.size() || hex.empty() || hex.size() > 16) r.fail(where + fs_.name + ".xxh3", "'" + hex + "' is not a 64-bit hex value");
      covered[fs_.name].emplace_back(fs_.first, fs_.count);
      rf.slices.push_back(fs_);
    }
    if (rf.rank >= m.world_size) r.fail(where + "rank", fmt::format("not below world_size {}", m.world_size));
    m.files.push_back(std::move(rf));
  }
  if (static_cast<int>(m.files.size()) != m.world_size)
    r.fail("files", fmt::format("{} files for world_size {}", m.files.size(), m.world_size));
  std::sort(m.files.begin(), m.files.end(), [](const RankFile& a, const RankFile& b) { return a.rank < b.rank; });
  for (std::size_t i = 0; i < m.files.size(); ++i)
    if (m.files[i].rank != static_cast<int>(i)) r.fail("files", fmt::format("rank {} missing or listed twice", i));
  for (const auto& t : m.tensors) {
    auto& pieces = covered[t.name];
    std::sort(pieces.begin(), pieces.end());
    std::uint64_t next = 0;
    for (const auto& [first, count] : pieces) {
      if (first != next) r.fail("files", fmt::format("tensor '{}': elements from {} {}", t.name, std::min(first, next),
                                                      first > next ? "in no file" : "in two files"));
      next = first + count;
    }
    if (next != t.elements)
      r.fail("files", fmt::format("tensor '{}': elements from {} of {} in no file", t.name, next, t.elements));
  }
  return m;
}

std::string step_dir_name(int step) { return fmt::format("step-{:08d}", step); }

void write_manifest(const fs::path& dir, const CheckpointManifest& m) {
  const fs::path final_path = dir / kManifestName;
  const fs::path tmp = dir / fmt::format(".{}.tmp.{}", kManifestName, ::getpid());
  try {
    {
      const std::string text = manifest_json(m);
      UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
      if (fd.get() < 0) raise_call_error("libc", "open", fmt::format("{}: {}", tmp.string(), std::strerror(errno)));
      std::size_t done = 0;
      while (done < text.size()) {
        const ssize_t w = ::write(fd.get(), text.data() + done, text.size() - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) raise_call_error("libc", "write", fmt::format("{}: {}", tmp.string(), std::strerror(w < 0 ? errno : ENOSPC)));
        done += static_cast<std::size_t>(w);
      }
      if (::fsync(fd.get()) != 0) raise_call_error("libc", "fsync", fmt::format("{}: {}", tmp.string(), std::strerror(errno)));
    }
    if (::rename(tmp.c_str(), final_path.c_str()) != 0)
      raise_call_error("libc", "rename", fmt::format("{} -> {}: {}", tmp.string(), final_path.string(), std::strerror(errno)));
  } catch (...) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw;
  }
  // The rename itself reaches the disk with the directory's fsync.
  fsync_path(dir, O_RDONLY | O_DIRECTORY);
}

CheckpointManifest read_manifest(const fs::path& dir) {
  const fs::path path = dir / kManifestName;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot be read ({})", path.string(), std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  // A manifest is a few kB per rank; a huge file is not one (and is not read whole).
  if (text.str().size() > (256u << 20)) throw InputError(fmt::format("{}: larger than 256 MiB: not a manifest", path.string()));
  return parse_manifest(text.str(), path.string());
}

FoundCheckpoint latest_checkpoint(const fs::path& root, const std::string& phase) {
  std::error_code ec;
  FoundCheckpoint found;
  if (!fs::is_directory(root, ec)) return found;
  std::vector<std::pair<int, fs::path>> steps;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string name = e.path().filename().string();
    int step = 0;
    if (name.size() == 13 && name.rfind("step-", 0) == 0 && std::all_of(name.begin() + 5, name.end(), ::isdigit) &&
        e.is_directory(ec)) {
      step = std::stoi(name.substr(5));
      steps.emplace_back(step, e.path());
    }
  }
  std::sort(steps.rbegin(), steps.rend());
  for (const auto& [step, dir] : steps) {
    if (!fs::exists(dir / kManifestName, ec)) {
      found.passed_over.push_back(fmt::format("{}: no manifest (a save that did not finish{})", dir.string(),
                                              describe_rank_files(dir)));
      continue;
    }
    try {
      CheckpointManifest m = read_manifest(dir);
      if (!phase.empty() && m.phase != phase) {
        found.passed_over.push_back(fmt::format("{}: a checkpoint of phase '{}'", dir.string(), m.phase));
        continue;
      }
      if (m.step != step) {
        found.passed_over.push_back(fmt::format("{}: its manifest says step {}", dir.string(), m.step));
        continue;
      }
      found.dir = dir;
      found.manifest = std::move(m);
      return found;
    } catch (const InputError& e) {
      found.passed_over.push_back(e.what());
    }
  }
  return found;
}

}  // namespace gpuaccept::train
