#include "html/html_escape.h"

namespace gpuaccept::report {

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (const char ch : text) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      case '\t':
      case '\n':
      case '\r': out += ch; break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) break;
        out += ch;
    }
  }
  return out;
}

}  // namespace gpuaccept::report
