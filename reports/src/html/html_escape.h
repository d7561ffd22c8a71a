// The one escaping function for every string that came from a results or config file
// (hostnames, messages, params, attributes, config text) on its way into HTML, SVG
// text and attributes, or JUnit XML. A hostname like "<script>alert(1)</script>"
// must show as text, never run.
#pragma once

#include <string>
#include <string_view>

namespace gpuaccept::report {

// Escapes & < > " ' as entities, so the result is safe in element content and in
// quoted attributes of HTML and XML alike; drops control characters other than tab,
// newline and carriage return, which XML 1.0 does not allow even as entities.
std::string html_escape(std::string_view text);

}  // namespace gpuaccept::report
