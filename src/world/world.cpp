#include "world/world.h"

#include <algorithm>
#include <cstring>

#include <unistd.h>

#include "common/error.h"
#include "common/log.h"

namespace gpuaccept {

namespace {
Bytes to_bytes(const std::string& s) {
  Bytes b(s.size());
  std::memcpy(b.data(), s.data(), s.size());
  return b;
}
std::string to_string(const Bytes& b) { return std::string(reinterpret_cast<const char*>(b.data()), b.size()); }
}  // namespace

std::vector<std::string> World::allgather_string(const std::string& mine) {
  std::vector<std::string> out;
  for (const auto& b : allgather(to_bytes(mine))) out.push_back(to_string(b));
  return out;
}

std::vector<Bytes> World::gather(std::span<const std::byte> mine, int root) {
  std::vector<Bytes> all = allgather(mine);
  if (rank() != root) all.clear();
  return all;
}

std::vector<std::string> World::gather_string(const std::string& mine, int root) {
  std::vector<std::string> out;
  for (const auto& b : gather(to_bytes(mine), root)) out.push_back(to_string(b));
  return out;
}

std::string World::broadcast_string(const std::string& data, int root) {
  return to_string(broadcast(to_bytes(data), root));
}

bool World::any(bool mine) {
  const auto all = allgather_string(mine ? "1" : "0");
  return std::any_of(all.begin(), all.end(), [](const std::string& s) { return s == "1"; });
}

void World::place_ranks(int rank, int size, const std::string& hostname) {
  rank_ = rank;
  size_ = size;
  hostname_ = hostname;
  const auto hosts = allgather_string(hostname);
  node_names_.clear();
  rank_nodes_.assign(hosts.size(), 0);
  for (std::size_t r = 0; r < hosts.size(); ++r) {
    auto it = std::find(node_names_.begin(), node_names_.end(), hosts[r]);
    if (it == node_names_.end()) it = node_names_.insert(node_names_.end(), hosts[r]);
    rank_nodes_[r] = static_cast<int>(it - node_names_.begin());
  }
  node_index_ = rank_nodes_[rank];
  local_rank_ = static_cast<int>(std::count(rank_nodes_.begin(), rank_nodes_.begin() + rank, node_index_));
  local_size_ = static_cast<int>(std::count(rank_nodes_.begin(), rank_nodes_.end(), node_index_));
  auto& ctx = log_context();
  ctx.rank = rank;
  ctx.size = size;
  ctx.host = hostname;
}

WorldBackend choose_backend(const char* pmix_namespace, const char* slurm_procid) {
  if (pmix_namespace && *pmix_namespace) return WorldBackend::Pmix;
  if (slurm_procid && *slurm_procid) return WorldBackend::MissingPmix;
  return WorldBackend::Single;
}

std::unique_ptr<World> make_world() {
  switch (choose_backend(std::getenv("PMIX_NAMESPACE"), std::getenv("SLURM_PROCID"))) {
    case WorldBackend::Pmix:
      return make_pmix_world();
    case WorldBackend::MissingPmix:
      throw InputError(
          "started by srun (SLURM_PROCID is set) but no PMIx server is in the environment: "
          "launch with `srun --mpi=pmix ...` (or set MpiDefault=pmix in slurm.conf)");
    case WorldBackend::Single:
      break;
  }
  return make_single_world();
}

std::string local_hostname() {
  char buf[256] = {};
  GPUACCEPT_CHECK_ERRNO(gethostname(buf, sizeof buf - 1));
  return buf;
}

}  // namespace gpuaccept
