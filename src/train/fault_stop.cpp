#include "train/fault_stop.h"

#include <chrono>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>

#include "common/log.h"
#include "cuda/arrival_board.h"
#include "train/arrival_progress.h"

namespace gpuaccept::train {

std::unique_ptr<RankRuntime> open_training_runtime(World& world, ResultWriter& results, const std::string& phase,
                                                   int device, const RuntimeOptions& deadlines,
                                                   const std::string& stage) {
  RankRuntime::Setup setup;
  setup.device = device;
  setup.arrivals_dir = results.run_dir() / (phase + ".arrivals");
  setup.create_abort_file = world.rank() == 0;
  setup.last_resort = [&world, &results, &stage](const std::string& why) {
    results.check("training", Status::Fail,
                  fmt::format("rank {} ({}) during {}: {}; the process ends here", world.rank(), world.hostname(),
                              stage, why));
    try {
      results.checkpoint();
      setenv("GPUACCEPT_PMIX_TIMEOUT", "30", 1);
      results.finish();  // the other ranks are on their way out too: rank 0 writes the file
    } catch (const std::exception& e) {
      log_error("writing results after the last resort failed: {}", e.what());
    }
    std::_Exit(1);
  };
  return std::make_unique<RankRuntime>(world, deadlines, std::move(setup));
}

void close_training_runtime(World& world, std::unique_ptr<RankRuntime>& rt) {
  rt->shutdown();
  const auto arrivals = rt->board().dir();
  rt.reset();
  world.barrier();
  if (world.rank() == 0) ArrivalBoard(arrivals, 0, "").remove();  // nobody writes heartbeats any more
}

std::string who_did_not_arrive(const Fault& fault, RankRuntime& rt, int self_rank) {
  const WaitContext& wait = fault.context();
  if (wait.target < 0 || wait.members.empty()) return {};
  // Dead: silent for two heartbeat periods (a live rank's watchdog thread writes on).
  const double dead_after_s = 2 * rt.options().heartbeat_s + 1;
  auto laggards = find_laggards(rt.board().read(wait.members), wait.members, wait.target, unix_now(),
                                dead_after_s);
  std::erase_if(laggards, [&](const Laggard& l) { return l.rank == self_rank; });
  return describe_fault_laggards(laggards, fault.waited_s(), dead_after_s, describe_arrival_progress);
}

void stop_after_fault(World& world, ResultWriter& results, RankRuntime* rt, const Fault* fault, const std::string& what,
                      const std::string& phase, const std::string& stage,
                      const std::function<std::string()>& record_progress) {
  log_error("{} stops during {}: {}", phase, stage, what);
  std::string who;
  if (rt) {
    rt->acknowledge_fault();
    if (fault) who = who_did_not_arrive(*fault, *rt, world.rank());
    if (!who.empty()) log_error("{}", who);
    auto g = rt->guard({"aborting the NCCL communicators after a fault", {}, -1}, 30);
    rt->abort_all();
    rt->board().raise_abort(fmt::format("rank {} ({}): {}", world.rank(), world.hostname(), what));
  }
  const std::string completed = record_progress();
  Record& failed = results.check(
      "training", Status::Fail,
      fmt::format("stopped during {} ({}): {}{}", stage, completed, what, who.empty() ? "" : "; " + who));
  // Other ranks did not arrive: this rank is a survivor (the laggards are named in the message,
  // and a hung one records its own FAIL through the last resort).
  if (!who.empty()) failed.params[kCauseParam] = kCausePeer;
  try {
    results.checkpoint();
  } catch (const std::exception& e) {
    log_error("results checkpoint failed: {}", e.what());
  }
  // The final gather goes through World; a dead rank would keep it waiting for PMIx's
  // default timeout, so the survivors use a short one (rank 0 then writes from the parts).
  setenv("GPUACCEPT_PMIX_TIMEOUT", "60", 1);
  std::thread([] {
    std::this_thread::sleep_for(std::chrono::seconds(240));
    log_error("still running 240 s after a fault: ending the process");
    std::_Exit(1);
  }).detach();
  if (rt) rt->abandon();
}

}  // namespace gpuaccept::train
