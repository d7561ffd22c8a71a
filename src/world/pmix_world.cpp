// The PMIx World: rank and size from the PMIx server that `srun --mpi=pmix` starts
// on every node; collectives are PMIx_Put / PMIx_Commit / PMIx_Fence(collect data) /
// PMIx_Get. Each collective uses a fresh key so that values never mix between calls.
#include <cstdlib>
#include <cstring>

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

// Seconds a fence may take before PMIx declares it failed (a rank that died or hangs);
// GPUACCEPT_PMIX_TIMEOUT overrides. 0 would mean "wait forever", which we never want.
int fence_timeout_s() {
  if (const char* v = std::getenv("GPUACCEPT_PMIX_TIMEOUT")) {
    const int t = std::atoi(v);
    if (t > 0) return t;
  }
  return 600;
}

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

  ~PmixWorld() override { PMIx_Finalize(nullptr, 0); }

  std::string backend() const override { return "pmix"; }

  std::vector<Bytes> allgather(std::span<const std::byte> mine) override {
    const std::string key = next_key();
    put(key, mine);
    fence(true);
    std::vector<Bytes> out;
    for (int r = 0; r < job_size_; ++r) out.push_back(get(key, r));
    return out;
  }

  Bytes broadcast(std::span<const std::byte> data, int root) override {
    const std::string key = next_key();
    if (static_cast<int>(me_.rank) == root) put(key, data);
    fence(true);
    return get(key, root);
  }

  // A fence that collects data, even none: Slurm's mpi/pmix (22.05) may complete a
  // non-collecting fence before every node has entered it (seen on the local cluster:
  // a rank left the barrier while a rank on the other node was still reading).
  void barrier() override { fence(true); }

 private:
  pmix_proc_t me_{};
  unsigned long seq_ = 0;
  int job_size_ = 0;  // known before place_ranks() sets size()

  std::string next_key() { return fmt::format("gpuaccept.{}", seq_++); }

  void put(const std::string& key, std::span<const std::byte> data) {
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

  void fence(bool collect) {
    pmix_info_t info[2];
    PMIX_INFO_CONSTRUCT(&info[0]);
    PMIX_INFO_CONSTRUCT(&info[1]);
    bool yes = collect;
    int timeout = fence_timeout_s();
    PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &timeout, PMIX_INT);
    pmix_proc_t all;
    PMIX_PROC_LOAD(&all, me_.nspace, PMIX_RANK_WILDCARD);
    const pmix_status_t rc = PMIx_Fence(&all, 1, info, 2);
    PMIX_INFO_DESTRUCT(&info[0]);
    PMIX_INFO_DESTRUCT(&info[1]);
    if (rc != PMIX_SUCCESS)
      raise_call_error("PMIx", "PMIx_Fence",
                       fmt::format("{} (a rank may have died or hung; timeout {} s)", PMIx_Error_string(rc),
                                   fence_timeout_s()));
  }

  Bytes get(const std::string& key, int rank) {
    pmix_proc_t proc;
    PMIX_PROC_LOAD(&proc, me_.nspace, static_cast<pmix_rank_t>(rank));
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

}  // namespace

std::unique_ptr<World> make_pmix_world() { return std::make_unique<PmixWorld>(); }

// "OpenPMIx 4.2.2rc2 (PMIx Standard: 4.2, ...)" -> "OpenPMIx 4.2.2rc2"
std::string pmix_version() {
  const std::string v = PMIx_Get_version();
  return v.substr(0, v.find(" ("));
}

}  // namespace gpuaccept
