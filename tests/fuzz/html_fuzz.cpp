// Fuzz target 5 (issue 18): html_escape (reports/src/html/html_escape.h), the one
// escaping function for every string from a results or config file on its way into the
// report's HTML, SVG and JUnit XML. Asserted on any bytes:
//  - no raw < > " ' in the output, and every & begins one of the five entities it writes;
//  - no control character but tab, newline and carriage return (XML 1.0 allows no other);
//  - every other byte of the input comes through unchanged and in order (unescaping the
//    output gives the input less the dropped control characters).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "html/html_escape.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const std::string out = gpuaccept::report::html_escape(in);
  static constexpr std::string_view kEntities[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&#39;"};
  static constexpr char kPlain[] = {'&', '<', '>', '"', '\''};
  std::string unescaped;
  for (std::size_t i = 0; i < out.size();) {
    const char c = out[i];
    const auto u = static_cast<unsigned char>(c);
    if (c == '<' || c == '>' || c == '"' || c == '\'') fuzz::finding("a raw < > \" or ' in html_escape's output");
    if ((u < 0x20 && c != '\t' && c != '\n' && c != '\r') || u == 0x7f)
      fuzz::finding("a control character in html_escape's output");
    if (c == '&') {
      std::size_t k = 0;
      while (k < 5 && out.compare(i, kEntities[k].size(), kEntities[k]) != 0) ++k;
      if (k == 5) fuzz::finding("an & in html_escape's output that begins no entity");
      unescaped += kPlain[k];
      i += kEntities[k].size();
      continue;
    }
    unescaped += c;
    ++i;
  }
  std::string kept;
  for (const char c : in) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t' && c != '\n' && c != '\r') || u == 0x7f) continue;
    kept += c;
  }
  if (unescaped != kept) fuzz::finding("html_escape lost or changed text other than control characters");
  return 0;
}
