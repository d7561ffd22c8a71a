// World: who this process is among the job's ranks, and the few collectives the
// phases need before (or instead of) NCCL: exchanging inventories, NCCL unique ids,
// result records, and agreeing on a verdict.
//
// Backends: PMIx (launched by `srun --mpi=pmix`) and a single process (started by
// hand). Rank placement (local rank, node index) is derived from the hostnames every
// rank reports, so it means the same thing on every backend.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace gpuaccept {

using Bytes = std::vector<std::byte>;

class World {
 public:
  virtual ~World() = default;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  int node_index() const { return node_index_; }  // 0..node_count()-1, in order of lowest rank
  int node_count() const { return static_cast<int>(node_names_.size()); }
  const std::string& hostname() const { return hostname_; }
  const std::vector<std::string>& node_names() const { return node_names_; }  // by node index
  const std::vector<int>& rank_nodes() const { return rank_nodes_; }          // node index by rank
  virtual std::string backend() const = 0;

  // Every rank contributes `mine`; every rank receives all contributions, by rank.
  virtual std::vector<Bytes> allgather(std::span<const std::byte> mine) = 0;
  // Every rank contributes `mine`; `root` receives all contributions, by rank, the others
  // nothing. What rank 0 alone needs (the result gather): each rank fetching every rank's
  // data, as allgather does, costs O(ranks) per rank (docs/performance.md, World's PMIx
  // collectives). This default is allgather's.
  virtual std::vector<Bytes> gather(std::span<const std::byte> mine, int root);
  // `root`'s data to every rank (the argument is ignored on the other ranks).
  virtual Bytes broadcast(std::span<const std::byte> data, int root) = 0;
  virtual void barrier() = 0;

  // String conveniences over the byte collectives.
  std::vector<std::string> allgather_string(const std::string& mine);
  std::vector<std::string> gather_string(const std::string& mine, int root);  // empty off root
  std::string broadcast_string(const std::string& data, int root);
  // True on every rank when any rank passes true (e.g. "some rank failed").
  bool any(bool mine);

 protected:
  // Called by a backend once rank and size are known: exchanges hostnames and fills
  // local rank, local size and node index.
  void place_ranks(int rank, int size, const std::string& hostname);

 private:
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1, node_index_ = 0;
  std::string hostname_;
  std::vector<std::string> node_names_;
  std::vector<int> rank_nodes_;
};

// Picks the backend from the environment:
//  - PMIx server present (PMIX_NAMESPACE / PMIX_RANK set): the PMIx backend;
//  - SLURM_PROCID set but no PMIx: throws an InputError telling to add --mpi=pmix;
//  - otherwise: a single process.
std::unique_ptr<World> make_world();

std::unique_ptr<World> make_single_world();
std::unique_ptr<World> make_pmix_world();

// Decides the backend from environment values (pure, unit-tested).
enum class WorldBackend { Single, Pmix, MissingPmix };
WorldBackend choose_backend(const char* pmix_namespace, const char* slurm_procid);

std::string local_hostname();
// The PMIx library this binary runs with (for the inventory).
std::string pmix_version();

}  // namespace gpuaccept
