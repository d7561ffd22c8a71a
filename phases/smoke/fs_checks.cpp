#include "smoke/fs_checks.h"

#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/progress.h"
#include "smoke/fs_bench.h"
#include "smoke/fs_token.h"
#include "common/json_text.h"

namespace gpuaccept::smoke {
namespace fs = std::filesystem;

std::filesystem::path fs_check_dir(const SmokeConfig& cfg, const fs::path& run_dir) {
  return cfg.fs_dir.empty() ? run_dir / "smoke.fs" : fs::path(cfg.fs_dir);
}

namespace {

void token_check(PhaseContext& ctx, const fs::path& dir) {
  World& w = ctx.world;
  std::error_code ec;
  fs::create_directories(dir, ec);
  FsToken mine{w.rank(), w.hostname(), std::random_device{}() * 0x100000000ull + std::random_device{}()};
  std::string error = ec ? fmt::format("mkdir {}: {}", dir.string(), ec.message()) : write_token_file(dir, mine);

  // Everyone learns every token (and who could not write), then reads a peer's file.
  nlohmann::json j = {{"rank", mine.rank}, {"host", mine.host}, {"token", mine.token}, {"error", error}};
  std::vector<nlohmann::json> all;
  for (const auto& s : w.allgather_string(json_text(j))) all.push_back(nlohmann::json::parse(s));

  Record r;
  r.test = "shared_fs";
  if (!error.empty()) {
    r.status = Status::Fail;
    r.message = fmt::format("{} cannot write its token file: {}", w.hostname(), error);
  } else if (w.node_count() < 2) {
    r.status = Status::Skip;
    r.message = fmt::format("one node: nothing to compare (wrote {})", token_path(dir, w.rank()).string());
  } else {
    const int peer = fs_peer_rank(w.rank(), w.rank_nodes());
    const auto& p = all[static_cast<std::size_t>(peer)];
    const FsToken theirs{peer, p.value("host", ""), p.value("token", std::uint64_t{0})};
    r.params = {{"peer_rank", std::to_string(peer)}, {"peer_node", theirs.host}};
    if (const std::string peer_error = p.value("error", ""); !peer_error.empty()) {
      r.status = Status::Skip;
      r.message = fmt::format("{} wrote no token to read: {}", theirs.host, peer_error);
    } else {
      const TokenCheck c = verify_token_file(token_path(dir, peer), theirs, w.hostname());
      r.status = c.status;
      r.message = c.message;
    }
  }
  r.params["dir"] = dir.string();
  ctx.results.add(std::move(r));

  w.barrier();  // every rank has read before any file goes
  fs::remove(token_path(dir, w.rank()), ec);
}

void node_measurements(PhaseContext& ctx, const SmokeConfig& cfg, const fs::path& dir) {
  World& w = ctx.world;
  const std::string host = w.hostname();
  const FsMetadata m = measure_metadata(dir / fmt::format("{}.meta", host), cfg.fs_metadata_files);
  const std::pair<const char*, double> ops[] = {{"create", m.create_us}, {"stat", m.stat_us}, {"unlink", m.unlink_us}};
  for (const auto& [op, us] : ops) {
    Record r;
    r.test = "shared_fs_metadata";
    r.metric = "latency";
    r.unit = "us";
    r.value = us;
    r.params = {{"op", op}, {"files", std::to_string(cfg.fs_metadata_files)}, {"dir", dir.string()}};
    r.status = m.error.empty() ? Status::Pass : Status::Fail;
    r.message = m.error.empty() ? fmt::format("{:.1f} us per {} over {} files", us, op, cfg.fs_metadata_files) : m.error;
    ctx.results.add(std::move(r));
  }
  const FsStream s = measure_stream(dir / fmt::format("{}.stream", host), cfg.fs_stream_bytes);
  const std::pair<const char*, double> dirs[] = {{"write", s.write_gbs}, {"read", s.read_gbs}};
  for (const auto& [direction, gbs] : dirs) {
    Record r;
    r.test = "shared_fs_stream";
    r.metric = "bandwidth";
    r.unit = "GB/s";
    r.value = gbs;
    r.params = {{"direction", direction}, {"bytes", std::to_string(cfg.fs_stream_bytes)}, {"dir", dir.string()}};
    r.status = s.error.empty() ? Status::Pass : Status::Fail;
    r.message = s.error.empty() ? fmt::format("{:.2f} GB/s {} of {} ({})", gbs, direction,
                                              format_bytes(static_cast<double>(cfg.fs_stream_bytes)),
                                              std::string(direction) == "write" ? "fsync'd" : "page cache dropped")
                                : s.error;
    ctx.results.add(std::move(r));
  }
}

}  // namespace

void run_shared_fs_checks(PhaseContext& ctx, const SmokeConfig& cfg) {
  const fs::path dir = fs_check_dir(cfg, ctx.results.run_dir());
  token_check(ctx, dir);
  // One rank per node measures, all nodes at once: the numbers show the filesystem
  // under the load a job's checkpoint would put on it.
  if (ctx.world.local_rank() == 0) node_measurements(ctx, cfg, dir);
  ctx.world.barrier();
  if (ctx.world.local_rank() == 0 && cfg.fs_dir.empty()) {
    std::error_code ec;
    fs::remove(dir, ec);  // only the directory we chose, and only once empty
  }
}

}  // namespace gpuaccept::smoke
