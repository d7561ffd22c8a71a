#include "results/utf8.h"

namespace gpuaccept {

namespace {

// The length of the well-formed sequence starting at text[i], 0 if there is none
// (the Unicode Standard's table 3-7 of well-formed byte sequences).
std::size_t sequence_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) n = 2;
  else if (lead >= 0xE0 && lead <= 0xEF) n = 3, lo = lead == 0xE0 ? 0xA0 : 0x80, hi = lead == 0xED ? 0x9F : 0xBF;
  else if (lead >= 0xF0 && lead <= 0xF4) n = 4, lo = lead == 0xF0 ? 0x90 : 0x80, hi = lead == 0xF4 ? 0x8F : 0xBF;
  else return 0;
  if (i + n > text.size() || byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  return n;
}

}  // namespace

std::size_t append_valid_utf8(std::string& out, std::string_view text) {
  const std::size_t before = out.size();
  std::size_t run = 0;  // start of the valid bytes not yet appended: appended in one go
  for (std::size_t i = 0; i < text.size();) {
    if (const std::size_t n = sequence_length(text, i)) {
      i += n;
      continue;
    }
    out.append(text, run, i - run);
    out += "\xEF\xBF\xBD";
    run = ++i;
  }
  out.append(text, run, text.size() - run);
  return out.size() - before;
}

std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  append_valid_utf8(out, text);
  return out;
}

}  // namespace gpuaccept
