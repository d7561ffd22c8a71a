// Fuzz target 1 (issue 18): the reader child's answer (src/results/result_file_wire.h)
// and the UTF-8 repair every string of it goes through (src/results/utf8.h).
//  - decode_result_file on any bytes returns a ResultFile or throws InputError: any other
//    exception (std::bad_alloc from a count that sized an allocation, std::length_error),
//    a crash or a sanitizer report is a finding;
//  - a decoded file encodes and decodes again (a fixed point after one round), with every
//    string valid UTF-8;
//  - valid_utf8 returns valid UTF-8 (checked by fuzz_util.h's own table), leaves valid text
//    unchanged and is idempotent.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

#include "common/error.h"
#include "fuzz_util.h"
#include "results/result_file_wire.h"
#include "results/utf8.h"

namespace {

using gpuaccept::ResultFile;

void check_strings(const ResultFile& f) {
  const auto check = [](const std::string& s) {
    if (!fuzz::is_valid_utf8(s)) fuzz::finding("a string of a re-encoded file is not valid UTF-8");
  };
  for (const auto& [k, v] : f.attributes) check(k), check(v);
  for (const auto& r : f.records) {
    for (const std::string* s : {&r.phase, &r.job_id, &r.array_job_id, &r.array_task_id, &r.node, &r.gpu_uuid,
                                 &r.test, &r.metric, &r.unit, &r.message})
      check(*s);
    for (const auto& [k, v] : r.params) check(k), check(v);
  }
  for (const auto& [name, texts] : f.documents) {
    check(name);
    for (const auto& t : texts) check(t);
  }
}

void check_utf8(std::string_view in) {
  const std::string out = gpuaccept::valid_utf8(in);
  if (!fuzz::is_valid_utf8(out)) fuzz::finding("valid_utf8 returned invalid UTF-8");
  if (fuzz::is_valid_utf8(in) && out != in) fuzz::finding("valid_utf8 changed valid UTF-8");
  if (gpuaccept::valid_utf8(out) != out) fuzz::finding("valid_utf8 is not idempotent");
  std::string appended = "prefix";
  const std::size_t n = gpuaccept::append_valid_utf8(appended, in);
  if (n != out.size() || appended.compare(6, std::string::npos, out) != 0)
    fuzz::finding("append_valid_utf8 differs from valid_utf8");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  check_utf8(bytes);

  ResultFile f;
  try {
    f = gpuaccept::decode_result_file(bytes);
  } catch (const gpuaccept::InputError&) {
    return 0;  // refused, as it should be
  } catch (const std::exception& e) {
    fuzz::finding(std::string("decode_result_file threw other than InputError: ") + e.what());
  }
  const std::string once = gpuaccept::encode_result_file(f);
  ResultFile g;
  try {
    g = gpuaccept::decode_result_file(once);
  } catch (const std::exception& e) {
    fuzz::finding(std::string("decode_result_file refused what encode_result_file wrote: ") + e.what());
  }
  check_strings(g);
  // Not encode(g) == once: two keys that differ only in invalid bytes become one key after
  // the repair. From g on, the round trip must be exact.
  const std::string twice = gpuaccept::encode_result_file(g);
  if (gpuaccept::encode_result_file(gpuaccept::decode_result_file(twice)) != twice)
    fuzz::finding("the wire round trip is not a fixed point");
  return 0;
}
