// Fuzz target 4 (issue 18): the report's run-directory loader, load_run
// (reports/src/run/loaded_run.h), each file read as the report reads it: in a forked child
// by read_result_file_isolated (limit FUZZ_READ_LIMIT_MS, default 300), with
// child_reader.h's reader in the child.
//
// The input is split into up to kMaxFiles files of a scratch run directory: each file is
// one byte choosing its name from kNames (phase files, a second run's file, rank
// checkpoints under <phase>.parts/, a writer's temporary, a stray file), two bytes of
// length (little-endian; the last file takes what is left) and its bytes. seeds/run_dir
// holds the report fixture's run directory in this form (make_seeds.sh).
//
// load_run is lenient by contract: on an existing directory it never throws, and every
// file it cannot read becomes an ERROR record. Asserted: no exception at all; each source
// that is not complete says why; every string of every record is valid UTF-8 (summary.json
// and junit.xml carry them); and, as in result_file_fuzz, no sanitizer report in the parent
// or about this project's code in the child.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "child_reader.h"
#include "fuzz_util.h"
#include "run/loaded_run.h"

namespace {

constexpr const char* kNames[] = {
    "discover.h5",           "smoke.h5",          "nccl-scaling.h5",
    "ddp.h5",                "fsdp-lora.h5",      "smoke-2.h5",
    "fsdp-lora.parts/rank-00000.h5", "fsdp-lora.parts/rank-00001.h5", "ddp.parts/rank-00000.h5",
    ".smoke.h5.tmp",         "notes.txt",         "unknown-phase.h5",
};
constexpr std::size_t kMaxFiles = 4;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace fs = std::filesystem;
  const fs::path dir = fuzz::scratch_dir() / "run";
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir);

  std::string_view in(reinterpret_cast<const char*>(data), size);
  for (std::size_t files = 0; files < kMaxFiles && in.size() >= 3; ++files) {
    const char* name = kNames[static_cast<unsigned char>(in[0]) % std::size(kNames)];
    std::size_t len = static_cast<unsigned char>(in[1]) | static_cast<std::size_t>(static_cast<unsigned char>(in[2])) << 8;
    in.remove_prefix(3);
    if (files + 1 == kMaxFiles || len > in.size()) len = in.size();
    const fs::path p = dir / name;
    fs::create_directories(p.parent_path());
    fuzz::write_file(p, in.substr(0, len));
    in.remove_prefix(len);
  }

  // load_run's own reader (isolated_reader) with the child's reader of child_reader.h.
  static const std::chrono::milliseconds kLimit = [] {
    const char* s = std::getenv("FUZZ_READ_LIMIT_MS");
    return std::chrono::milliseconds(s && *s ? std::atoi(s) : 300);
  }();
  const gpuaccept::ResultFileReader read = [](const fs::path& p) {
    return gpuaccept::read_result_file_isolated(p, kLimit, &fuzz::read_in_child);
  };
  gpuaccept::report::LoadedRun run;
  try {
    run = gpuaccept::report::load_run(dir, {"discover", "smoke", "nccl-scaling", "ddp", "fsdp-lora"}, read);
  } catch (const std::exception& e) {
    fuzz::finding(std::string("load_run threw: ") + e.what());
  }
  for (const auto& s : run.sources)
    if (s.state != gpuaccept::report::SourceState::Complete && s.problem.empty())
      fuzz::finding("a source that is not complete does not say why");
  if (fuzz::child_sanitizer_report()) fuzz::finding("sanitizer report in a reader child (its text is above)");
  for (const auto& r : run.records) {
    for (const std::string* s : {&r.phase, &r.node, &r.gpu_uuid, &r.test, &r.metric, &r.unit, &r.message})
      if (!fuzz::is_valid_utf8(*s)) fuzz::finding("a record's string is not valid UTF-8");
    for (const auto& [k, v] : r.params)
      if (!fuzz::is_valid_utf8(k) || !fuzz::is_valid_utf8(v)) fuzz::finding("a record's params are not valid UTF-8");
  }
  return 0;
}
