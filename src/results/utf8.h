// Making a string valid UTF-8. A damaged results file can hold any bytes in its strings
// (the layout says UTF-8; libhdf5 does not check); passed on, they would make summary.json
// or junit.xml text that a CI job's parser refuses.
#pragma once

#include <string>
#include <string_view>

namespace gpuaccept {

// `text` with every byte that does not begin or continue a well-formed UTF-8 sequence
// (an overlong form, a surrogate, a code point past U+10FFFF, a cut-off sequence)
// replaced by U+FFFD. Valid text comes back unchanged.
std::string valid_utf8(std::string_view text);

// The same, appended to `out` (no string of its own: the wire encoder calls it for every
// string of every record). Returns the number of bytes appended.
std::size_t append_valid_utf8(std::string& out, std::string_view text);

}  // namespace gpuaccept
