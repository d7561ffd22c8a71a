// make-passed-run: a run directory whose discover and smoke files say that the named nodes'
// GPUs were measured, for tests/cluster/test_resume.sh. The local cluster has no GPU, so no
// real run there hands a node back (model/good_nodes.h: a node none of whose GPUs was measured
// is held back); this stands in for the run a GPU cluster would give, and everything after it
// (the report, resume.sh, drain.sh, Slurm) is the real thing.
//   make-passed-run DIR --ended 2026-11-28T10:05:00Z [--reservation NAME] NODE[:fail] ...
// NODE:fail gives that node a FAILed GPU check (so the report drains it).
#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "results/result_file.h"

using namespace gpuaccept;

int main(int argc, char** argv) {
  std::string dir, ended, reservation;
  std::vector<std::string> nodes;
  CLI::App app{"Writes a run directory whose GPUs were measured (for tests)"};
  app.add_option("dir", dir)->required();
  app.add_option("--ended", ended, "end_time of the files (ISO 8601 UTC)")->required();
  app.add_option("--reservation", reservation, "slurm_reservation of the files");
  app.add_option("nodes", nodes, "NODE or NODE:fail")->required();
  CLI11_PARSE(app, argc, argv);

  std::filesystem::create_directories(dir);
  std::vector<std::string> hosts;
  for (const auto& n : nodes) hosts.push_back(n.substr(0, n.find(':')));
  for (const char* phase : {"discover", "smoke"}) {
    ResultFile f;
    f.attributes = {{"phase", phase},          {"start_time", ended},
                    {"end_time", ended},       {"slurm_reservation", reservation},
                    {"world_size", std::to_string(hosts.size())},
                    {"hosts", fmt::format("{}", fmt::join(hosts, ","))},
                    {"complete", "yes"}};
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      Record r;
      r.phase = phase;
      r.rank = static_cast<int>(i);
      r.node = hosts[i];
      r.gpu_index = 0;
      r.gpu_uuid = fmt::format("GPU-{}", hosts[i]);
      r.test = std::string(phase) == "discover" ? "gpu_visible" : "binding_gpu";
      const bool fail = nodes[i].ends_with(":fail") && std::string(phase) == "smoke";
      r.status = fail ? Status::Fail : Status::Pass;
      r.message = fail ? "injected by make-passed-run" : "measured";
      f.records.push_back(r);
    }
    write_result_file(std::filesystem::path(dir) / (std::string(phase) + ".h5"), f);
  }
  return 0;
}
