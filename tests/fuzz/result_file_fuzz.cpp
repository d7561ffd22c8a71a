// Fuzz target 2 (issue 18): reading a results file, as the report, the baseline run and
// gpuaccept-salvage do: read_result_file_isolated (src/results/isolated_read.h) on any
// bytes written to a scratch file.
//
// What is fuzzed is the parent's side, not libhdf5. Debian's libhdf5 is uninstrumented and
// known to crash and loop on damaged files (docs/reliability.md); fuzzing it in-process
// would only find those again. The child runs it (with this project's read_result_file,
// instrumented) under a short limit (FUZZ_READ_LIMIT_MS, default 300). Asserted:
//  - the parent returns a ResultFile or throws InputError: another exception, a crash, a
//    hang (libFuzzer's -timeout) or a sanitizer report in the parent is a finding;
//  - a file that is read has every string valid UTF-8 (the wire repairs them);
//  - a sanitizer report in the child (the child ends with kChildSanitizerExit) is a finding
//    too unless FUZZ_CHILD_SANITIZER=count, for triage: it can be libhdf5's own doing seen
//    through ASan's interceptors (memcpy, strlen) rather than this project's code.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "child_reader.h"
#include "common/error.h"
#include "fuzz_util.h"
#include "results/isolated_read.h"

namespace {

std::chrono::milliseconds limit() {
  const char* s = std::getenv("FUZZ_READ_LIMIT_MS");
  return std::chrono::milliseconds(s && *s ? std::atoi(s) : 300);
}

void check_utf8(const std::string& s) {
  if (!fuzz::is_valid_utf8(s)) fuzz::finding("a string read from a results file is not valid UTF-8");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::chrono::milliseconds kLimit = limit();
  static const bool kCountChildReports = [] {
    const char* s = std::getenv("FUZZ_CHILD_SANITIZER");
    return s && std::string_view(s) == "count";
  }();
  const auto path = fuzz::scratch_dir() / "smoke.h5";
  fuzz::write_file(path, std::string_view(reinterpret_cast<const char*>(data), size));
  try {
    const gpuaccept::ResultFile f = gpuaccept::read_result_file_isolated(path, kLimit, &fuzz::read_in_child);
    for (const auto& [k, v] : f.attributes) check_utf8(k), check_utf8(v);
    for (const auto& r : f.records) {
      for (const std::string* s : {&r.phase, &r.node, &r.gpu_uuid, &r.test, &r.metric, &r.unit, &r.message})
        check_utf8(*s);
      for (const auto& [k, v] : r.params) check_utf8(k), check_utf8(v);
    }
    for (const auto& [name, texts] : f.documents)
      for (const auto& t : texts) check_utf8(t);
  } catch (const gpuaccept::InputError& e) {
    if (fuzz::child_sanitizer_report() && !kCountChildReports)
      fuzz::finding(std::string("sanitizer report in the reader child: ") + e.what());
  } catch (const std::exception& e) {
    fuzz::finding(std::string("read_result_file_isolated threw other than InputError: ") + e.what());
  }
  return 0;
}
