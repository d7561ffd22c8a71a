// Heartbeats: while a phase runs, every rank touches <run>/<phase>.parts/rank-NNNNN.alive
// every GPUACCEPT_HEARTBEAT seconds (default 10; 0 turns them off) from a thread of its own.
// A rank that hangs as a whole (SIGSTOP, a node frozen) stops touching it; one that waits or
// works goes on. When a step ends without a gather (a fence timed out, the step was killed),
// silent_ranks() names the ranks whose heartbeat stopped well before the others': the ERROR
// record of the salvaged file then says which rank hung, not only that one did.
#pragma once

#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "results/record.h"

namespace gpuaccept {

// GPUACCEPT_HEARTBEAT in seconds (default 10); 0 or less: no heartbeat.
double heartbeat_period_s();

class Heartbeat {
 public:
  Heartbeat(std::filesystem::path file, double period_s);  // period <= 0: does nothing
  ~Heartbeat();
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;
  // Stops the beats and marks the file "ended" (a rank that ended is not silent); idempotent.
  void stop();

 private:
  std::filesystem::path file_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
  void beat(bool first) const;
};

// A rank in `parts_dir` whose .alive file is older than the newest by more than three periods
// (at least 3 s): it stopped (hung, SIGSTOPped, its node lost) while the others went on.
struct SilentRank {
  int rank = 0;
  std::string node;       // from the rank's records; "" when it left none
  double behind_s = 0;    // how long before the last rank's heartbeat its own stopped
};
// `records` give each rank's node. Empty when no rank is silent (or heartbeats are off).
std::vector<SilentRank> silent_ranks(const std::filesystem::path& parts_dir, const std::vector<Record>& records,
                                     double period_s = heartbeat_period_s());
// "rank 3 (gpa-node2): its heartbeat stopped 14 s before the last rank's (hung or stopped, or its node lost)"
std::string describe(const SilentRank& s);
// An ERROR of `result_gather` that is that rank's own (its rank and node), so the report names
// its node among the bad ones, where the survivors' errors only say a peer did not arrive.
Record silent_rank_record(const SilentRank& s, const std::string& phase);

// Seconds since the newest heartbeat in `parts_dir` was touched (by this machine's clock); -1
// when there is none. A report that finds <phase>.parts/ without <phase>.h5 tells from it
// whether the phase is still running (a few periods) or died long ago.
double newest_heartbeat_age_s(const std::filesystem::path& parts_dir);

}  // namespace gpuaccept
