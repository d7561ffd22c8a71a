// gpuaccept-health: is this node fit to take a job, in seconds? For Slurm's
// HealthCheckProgram or a Prolog (docs/health-check.md), following LBNL NHC's conventions:
//   exit 0 and one line on stdout: healthy;
//   exit 1 and the reason on stderr (first line: the first problem): not healthy; with
//     --drain the node is drained in Slurm with that reason;
//   exit 2: the command line is wrong.
// A check that does not finish within --time-limit is itself a failure (a GPU that hangs).
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "slurm/slurm_api.h"
#include "smoke/node_health.h"

using namespace gpuaccept;

namespace {

constexpr std::size_t kMaxReason = 200;  // as the report's drain.sh (reports/src/output/drain_files.h)

// slurmd gives its HealthCheckProgram and Prolog the node's Slurm name; elsewhere the host's.
std::string default_node_name() {
  if (const char* n = std::getenv("SLURMD_NODENAME"); n && *n) return n;
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  std::string h = buf;
  return h.substr(0, h.find('.'));
}

std::string reason_text(const std::string& first_problem) {
  std::string r = "gpuaccept-health: " + first_problem;
  for (char& c : r)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  if (r.size() > kMaxReason) {
    std::size_t cut = kMaxReason - 3;
    while (cut > 0 && (static_cast<unsigned char>(r[cut]) & 0xC0) == 0x80) --cut;
    r = r.substr(0, cut) + "...";
  }
  return r;
}

// Says the node is not healthy; drains it when asked. Returns the exit code (1).
int unhealthy(const std::string& node, const std::vector<std::string>& problems, bool drain) {
  std::fprintf(stderr, "gpuaccept-health: FAIL %s: %s%s\n", node.c_str(), problems.front().c_str(),
               problems.size() > 1 ? fmt::format(" (+{} more)", problems.size() - 1).c_str() : "");
  for (std::size_t i = 1; i < problems.size(); ++i) std::fprintf(stderr, "  %s\n", problems[i].c_str());
  if (drain) {
    try {
      drain_node(node, reason_text(problems.front()));
      std::fprintf(stderr, "gpuaccept-health: drained %s\n", node.c_str());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gpuaccept-health: could not drain %s: %s\n", node.c_str(), e.what());
    }
  }
  std::fflush(nullptr);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  smoke::HealthOptions o;
  std::string node = default_node_name();
  double time_limit_s = 10;
  bool drain = false, no_xids = false;
  CLI::App app{"gpuaccept-health: is this node fit to take a job? For Slurm's HealthCheckProgram or a Prolog.\n"
               "Exit 0: healthy (one line on stdout); 1: not (the reason on stderr; --drain drains the node); "
               "2: bad command line."};
  app.add_option("--expect-gpus", o.expect_gpus, "GPUs this node must have (default: as many as NVML sees, ≥1)");
  app.add_option("--expect-driver", o.expect_driver, "the driver version the cluster runs, e.g. 580.95.05");
  app.add_option("--expect-cuda", o.expect_cuda, "the driver's CUDA version, e.g. 13000");
  app.add_option("--gemm-size", o.gemm_size, "bf16 GEMM size per GPU, verified (default 2048)")->check(CLI::Range(256, 16384));
  app.add_option("--copy-mib", o.copy_bytes, "device copy per GPU in MiB, verified (default 256)")
      ->transform([](const std::string& v) { return std::to_string(std::stoull(v) << 20); })
      ->check(CLI::PositiveNumber);
  app.add_option("--time-limit", time_limit_s, "seconds before a check that has not ended is a failure (default 10)")
      ->check(CLI::Range(1.0, 3600.0));
  app.add_flag("--no-xids", no_xids, "leave the kernel log's XIDs alone");
  app.add_flag("--drain", drain, "drain this node in Slurm with the reason when it is not healthy");
  app.add_option("--node", node, "this node's Slurm NodeName (default: $SLURMD_NODENAME, else the short hostname)");
  app.add_option("--debug-fail", o.debug_fail)->group("");  // tests: a problem injected
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  o.read_xids = !no_xids;

  // The checks run on a thread of their own, so a GPU call that never returns is met
  // here at the time limit instead of hanging Slurm's health check.
  const auto start = std::chrono::steady_clock::now();
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  smoke::HealthResult result;
  std::thread worker([&] {
    smoke::HealthResult r;
    try {
      r = smoke::check_node_health(o);
    } catch (const std::exception& e) {
      r.problems.push_back(fmt::format("the check itself failed: {}", e.what()));
    }
    std::lock_guard lock(m);
    result = std::move(r);
    done = true;
    cv.notify_one();
  });
  std::unique_lock lock(m);
  if (!cv.wait_for(lock, std::chrono::duration<double>(time_limit_s), [&] { return done; })) {
    const int rc = unhealthy(node, {fmt::format("the checks did not finish within {:g} s (a GPU or driver call that "
                                                "does not return)", time_limit_s)},
                             drain);
    std::_Exit(rc);  // the worker is stuck in a call that will not return: leave without joining it
  }
  lock.unlock();
  worker.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!result.ok()) return unhealthy(node, result.problems, drain);
  std::printf("gpuaccept-health: OK %s: %d GPU(s)%s%s, %.1f s%s\n", node.c_str(), result.gpus,
              result.gpu_name.empty() ? "" : fmt::format(" ({})", result.gpu_name).c_str(),
              result.gpus > 0 ? fmt::format(", health read, bf16 GEMM {}³ and {} MiB copies verified", o.gemm_size,
                                            o.copy_bytes >> 20)
                                    .c_str()
                              : "",
              seconds, result.notes.empty() ? "" : fmt::format(" ({} note(s) on stderr)", result.notes.size()).c_str());
  for (const auto& n : result.notes) std::fprintf(stderr, "gpuaccept-health: note: %s\n", n.c_str());
  return 0;
}
