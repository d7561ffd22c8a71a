// The reader the results-file and run-directory targets run in the forked child:
// read_result_file itself, with a sanitizer report in the child sorted before the child
// ends (instead of libFuzzer's crash handler running there and saving a crash file for an
// input the parent handled correctly):
//  - a report whose first frame outside the sanitizer runtime is in libhdf5 (an
//    uninstrumented library, checked only where it calls malloc/free/memcpy: a bad free or
//    an out-of-bounds copy on a damaged file, the crashes docs/reliability.md describes)
//    ends the child with kChildLibhdf5Exit: the same as the SIGSEGV or SIGABRT it is
//    without the sanitizers, which the parent turns into an ERROR;
//  - an end without any report: ASan's own "CHECK failed" when an interceptor is asked for
//    an absurd size ("sanitizer_libc.cpp:274 size <= 1<<40": libhdf5 copying a length read
//    from a damaged file, seen in make test on 2026-11-25) counts as libhdf5's too: no stack
//    comes with it, and the project's code never copies a size it did not bound first
//    (record_bounds.h; the wire decoder is fuzzed on its own in wire_fuzz);
//  - any other report (this project's code; every UBSan report) ends it with
//    kChildSanitizerExit and leaves a marker file beside the input, which the target counts
//    as a finding (child_sanitizer_report()).
// In both cases ASan's report is on stderr. The marker, not the parent's error text, tells:
// that text may quote the damaged file, and a mutation that wrote "exited with code 86 " into
// a params string once passed for a report (2026-11-25, 908 s into a result_file run).
#pragma once

#include <fcntl.h>
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "results/result_file.h"

namespace fuzz {

inline constexpr int kChildSanitizerExit = 86;
inline constexpr int kChildLibhdf5Exit = 87;

inline bool& report_in_libhdf5() {
  static bool in = false;
  return in;
}

inline bool& reported() {
  static bool any = false;
  return any;
}

// The first frame of the report's first stack that is not the sanitizer runtime itself.
inline bool first_own_frame_in_libhdf5(std::string_view report) {
  std::size_t at = 0;
  while ((at = report.find("    #", at)) != std::string_view::npos) {
    const std::size_t end = report.find('\n', at);
    const std::string_view frame = report.substr(at, end == std::string_view::npos ? end : end - at);
    at = end;
    const std::size_t in = frame.find(" in ");
    if (in == std::string_view::npos) continue;
    const std::string_view fn = frame.substr(in + 4);
    if (fn.starts_with("__interceptor_") || fn.starts_with("__asan") || fn.starts_with("__sanitizer") ||
        fn.starts_with("free ") || fn.starts_with("malloc ") || fn.starts_with("calloc ") ||
        fn.starts_with("realloc ") || fn.starts_with("operator ") || fn.starts_with("mem") ||
        fn.starts_with("str"))
      continue;
    return frame.find("libhdf5") != std::string_view::npos;
  }
  return false;
}

// Written by a reader child that ends with a report about this project's code.
inline const std::string& sanitizer_marker() {
  static const std::string path = (scratch_dir() / "child-sanitizer-report").string();
  return path;
}

inline gpuaccept::ResultFile read_in_child(const std::filesystem::path& path) {
  (void)sanitizer_marker();  // its path made before any report, in the parent's scratch directory
  __asan_set_error_report_callback([](const char* report) {
    reported() = true;
    report_in_libhdf5() = first_own_frame_in_libhdf5(report);
  });
  __sanitizer_set_death_callback([] {
    if (!reported() || report_in_libhdf5()) ::_exit(kChildLibhdf5Exit);
    const int fd = ::open(sanitizer_marker().c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) ::close(fd);
    ::_exit(kChildSanitizerExit);
  });
  return gpuaccept::read_result_file(path);
}

// True when a reader child since the last call ended with a sanitizer report about this
// project's code (its text is on stderr, above); clears the marker.
inline bool child_sanitizer_report() {
  std::error_code ec;
  return std::filesystem::remove(sanitizer_marker(), ec);
}

}  // namespace fuzz

// ASan's options for these binaries (ASAN_OPTIONS adds to and overrides them): libhdf5's own
// out-of-bounds copies suppressed where ASan can (libhdf5.supp says why), and malloc
// returning null rather than ending the child when a damaged size asks for more than the
// child's address-space cap: libhdf5 then fails the read, as it does without sanitizers.
extern "C" const char* __asan_default_options() {
  return "suppressions=" FUZZ_SOURCE_DIR "/tests/fuzz/libhdf5.supp:allocator_may_return_null=1";
}
