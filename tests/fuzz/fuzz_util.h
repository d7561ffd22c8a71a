// What the fuzz targets share: a scratch directory of this process, a finding that
// stops the fuzzer with a message, and a strict UTF-8 check written apart from
// src/results/utf8.cpp (so the two do not share a mistake).
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace fuzz {

// A property the target asserts did not hold: print it and abort, which libFuzzer
// reports as a crash and saves the input as crash-<sha1>.
[[noreturn]] inline void finding(std::string_view what) {
  std::fprintf(stderr, "\nFUZZ FINDING: %.*s\n", static_cast<int>(what.size()), what.data());
  std::abort();
}

// $TMPDIR/gpuaccept-fuzz-<pid>, made on first use and removed at exit.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::filesystem::path d = std::filesystem::path(tmp && *tmp ? tmp : "/tmp") /
                              ("gpuaccept-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    static const std::string keep = d.string();
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(keep, ec);
    });
    return d;
  }();
  return dir;
}

inline void write_file(const std::filesystem::path& p, std::string_view bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) finding("could not write the scratch file " + p.string());
}

// Well-formed UTF-8 by the Unicode Standard's table 3-7.
inline bool is_valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto b = [&](std::size_t k) { return static_cast<unsigned>(static_cast<unsigned char>(s[k])); };
    const unsigned c = b(i);
    std::size_t n;
    unsigned lo = 0x80, hi = 0xBF;
    if (c <= 0x7F) n = 1;
    else if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c == 0xE0) n = 3, lo = 0xA0;
    else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) n = 3;
    else if (c == 0xED) n = 3, hi = 0x9F;
    else if (c == 0xF0) n = 4, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) n = 4;
    else if (c == 0xF4) n = 4, hi = 0x8F;
    else return false;
    if (i + n > s.size()) return false;
    if (n > 1 && (b(i + 1) < lo || b(i + 1) > hi)) return false;
    for (std::size_t k = 2; k < n; ++k)
      if (b(i + k) < 0x80 || b(i + k) > 0xBF) return false;
    i += n;
  }
  return true;
}

}  // namespace fuzz
