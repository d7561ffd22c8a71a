// The PMIx World: rank and size from the PMIx server that `srun --mpi=pmix` starts
// on every node; collectives are PMIx_Put / PMIx_Commit / PMIx_Fence(collect data) /
// PMIx_Get. Each collective uses a fresh key so that values never mix between calls. Every
// collective ends within GPUACCEPT_PMIX_TIMEOUT (+5 s), whatever the launcher does (bounded()).
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <thread>

#include <fmt/format.h>
#include <pmix.h>

#include "common/error.h"
#include "world/world.h"

namespace gpuaccept {
namespace {

#define GPUACCEPT_PMIX_CHECK(call)                                                 \
  do {                                                                             \
    const pmix_status_t gpa_rc_ = (call);                                          \
    if (gpa_rc_ != PMIX_SUCCESS) ::gpuaccept::raise_call_error("PMIx", #call, PMIx_Error_string(gpa_rc_)); \
  } while (0)

// Seconds past the fence timeout after which a rank stops waiting for PMIx itself.
constexpr int kFenceGraceS = 5;

// Seconds a fence may take before PMIx declares it failed (a rank that died or hangs);
// GPUACCEPT_PMIX_TIMEOUT overrides. 0 would mean "wait forever", which we never want.
int fence_timeout_s() {
  if (const char* v = std::getenv("GPUACCEPT_PMIX_TIMEOUT")) {
    const int t = std::atoi(v);
    if (t > 0) return t;
  }
  return 600;
}

// The PMIx calls of one collective, on values only (no PmixWorld): a collective abandoned at
// its deadline may return long after, when the World that started it is gone.
struct PmixCalls {
  pmix_proc_t me;
  int timeout_s;

  void put(const std::string& key, const Bytes& data) const {
    pmix_value_t v;
    PMIX_VALUE_CONSTRUCT(&v);
    v.type = PMIX_BYTE_OBJECT;
    // PMIx_Put copies the value; an empty payload still needs a valid pointer.
    static char empty = 0;
    v.data.bo.bytes = data.empty() ? &empty : const_cast<char*>(reinterpret_cast<const char*>(data.data()));
    v.data.bo.size = data.size();
    GPUACCEPT_PMIX_CHECK(PMIx_Put(PMIX_GLOBAL, key.c_str(), &v));
    GPUACCEPT_PMIX_CHECK(PMIx_Commit());
  }

  // A fence that collects data, even none: Slurm's mpi/pmix (22.05) may complete a
  // non-collecting fence before every node has entered it (seen on the local cluster:
  // a rank left the barrier while a rank on the other node was still reading).
  void fence() const {
    pmix_info_t info[2];
    PMIX_INFO_CONSTRUCT(&info[0]);
    PMIX_INFO_CONSTRUCT(&info[1]);
    bool yes = true;
    int timeout = timeout_s;
    PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &timeout, PMIX_INT);
    pmix_proc_t all;
    PMIX_PROC_LOAD(&all, me.nspace, PMIX_RANK_WILDCARD);
    const pmix_status_t rc = PMIx_Fence(&all, 1, info, 2);
    PMIX_INFO_DESTRUCT(&info[0]);
    PMIX_INFO_DESTRUCT(&info[1]);
    if (rc != PMIX_SUCCESS)
      raise_call_error("PMIx", "PMIx_Fence",
                       fmt::format("{} (a rank may have died or hung; timeout {} s)", PMIx_Error_string(rc), timeout_s));
  }

  Bytes get(const std::string& key, int rank) const {
    pmix_proc_t proc;
    PMIX_PROC_LOAD(&proc, me.nspace, static_cast<pmix_rank_t>(rank));
    pmix_value_t* val = nullptr;
    const pmix_status_t rc = PMIx_Get(&proc, key.c_str(), nullptr, 0, &val);
    if (rc != PMIX_SUCCESS)
      raise_call_error("PMIx", "PMIx_Get", fmt::format("{} for key {} of rank {}", PMIx_Error_string(rc), key, rank));
    Bytes out;
    if (val->type == PMIX_BYTE_OBJECT && val->data.bo.size > 0) {
      out.resize(val->data.bo.size);
      std::memcpy(out.data(), val->data.bo.bytes, val->data.bo.size);
    }
    PMIX_VALUE_RELEASE(val);
    return out;
  }
};

class PmixWorld final : public World {
 public:
  PmixWorld() {
    GPUACCEPT_PMIX_CHECK(PMIx_Init(&me_, nullptr, 0));
    pmix_proc_t wildcard;
    PMIX_PROC_LOAD(&wildcard, me_.nspace, PMIX_RANK_WILDCARD);
    pmix_value_t* val = nullptr;
    GPUACCEPT_PMIX_CHECK(PMIx_Get(&wildcard, PMIX_JOB_SIZE, nullptr, 0, &val));
    job_size_ = static_cast<int>(val->data.uint32);
    PMIX_VALUE_RELEASE(val);
    place_ranks(static_cast<int>(me_.rank), job_size_, local_hostname());
  }

  // After an abandoned collective the PMIx client may be stuck talking to its server:
  // PMIx_Finalize could wait for it too, and the process must end (its results are written).
  ~PmixWorld() override {
    if (!abandoned_) PMIx_Finalize(nullptr, 0);
  }

  std::string backend() const override { return "pmix"; }

  std::vector<Bytes> allgather(std::span<const std::byte> mine) override { return collect(mine, true); }

  // As allgather, but only `root` fetches the values: every node's PMIx server still receives
  // the whole collection in the fence, the ranks' N fetches each are what this saves.
  std::vector<Bytes> gather(std::span<const std::byte> mine, int root) override {
    return collect(mine, static_cast<int>(me_.rank) == root);
  }

  Bytes broadcast(std::span<const std::byte> data, int root) override {
    const bool mine = static_cast<int>(me_.rank) == root;
    return bounded<Bytes>([c = calls(), key = next_key(), data = mine ? Bytes(data.begin(), data.end()) : Bytes(),
                           mine, root] {
      if (mine) c.put(key, data);
      c.fence();
      return c.get(key, root);
    });
  }

  void barrier() override {
    bounded<int>([c = calls()] {
      c.fence();
      return 0;
    });
  }

 private:
  pmix_proc_t me_{};
  unsigned long seq_ = 0;
  int job_size_ = 0;  // known before place_ranks() sets size()
  bool abandoned_ = false;

  std::string next_key() { return fmt::format("gpuaccept.{}", seq_++); }
  PmixCalls calls() const { return {me_, fence_timeout_s()}; }

  // Every rank puts `mine`; after the fence this rank fetches every rank's value if `fetch`.
  std::vector<Bytes> collect(std::span<const std::byte> mine, bool fetch) {
    const int n = fetch ? job_size_ : 0;
    return bounded<std::vector<Bytes>>(
        [c = calls(), key = next_key(), data = Bytes(mine.begin(), mine.end()), n] {
          c.put(key, data);
          c.fence();
          std::vector<Bytes> out;
          for (int r = 0; r < n; ++r) out.push_back(c.get(key, r));
          return out;
        });
  }

  // Runs one collective's PMIx calls on a thread of their own and waits for them a little
  // longer than the fence timeout they ask PMIx for. PMIx honours that timeout while a rank of
  // a live node is missing (a rank that hangs: cluster.fault.rank_hang), but when a whole node
  // is lost Slurm's mpi/pmix plugin keeps its node's PMIx server busy retrying sends to it (80 s
  // and more on the local cluster: cluster.fault.node_lost), and even PMIx_Commit waits for
  // that server. Past the deadline the thread is left where it is (it holds only copies) and
  // the collective fails here, so the survivors can write what they measured and end.
  template <typename R, typename F>
  R bounded(F&& op) {
    const int timeout_s = fence_timeout_s();
    auto task = std::make_shared<std::packaged_task<R()>>(std::forward<F>(op));
    std::future<R> done = task->get_future();
    std::thread([task] { (*task)(); }).detach();
    const int deadline_s = timeout_s + kFenceGraceS;
    if (done.wait_for(std::chrono::seconds(deadline_s)) != std::future_status::ready) {
      abandoned_ = true;
      raise_call_error("PMIx", "PMIx_Fence",
                       fmt::format("no answer within {} s (GPUACCEPT_PMIX_TIMEOUT {} s + {} s): a rank or a whole "
                                   "node may have died or hung, or this node's PMIx server is stuck on a lost one",
                                   deadline_s, timeout_s, kFenceGraceS));
    }
    return done.get();  // the collective's own error, if it failed in time
  }
};

}  // namespace

std::unique_ptr<World> make_pmix_world() { return std::make_unique<PmixWorld>(); }

// "OpenPMIx 4.2.2rc2 (PMIx Standard: 4.2, ...)" -> "OpenPMIx 4.2.2rc2"
std::string pmix_version() {
  const std::string v = PMIx_Get_version();
  return v.substr(0, v.find(" ("));
}

}  // namespace gpuaccept
