// Catch2 v2's single header, spelled for Catch2 v3 (Debian 13 ships 3.x, Debian 12 2.13):
// the tests are written against v2's names, and tests/CMakeLists.txt puts this folder on the
// include path only where Catch2 3 is found. What the tests use of v2 and v3 renamed:
//   Catch::Contains (a string matcher)   -> Catch::Matchers::ContainsSubstring
//   Catch::StartsWith, Catch::Equals     -> Catch::Matchers::StartsWith, ::Equals
//   Approx at global scope               -> Catch::Approx
//   CATCH_CONFIG_MAIN gives a main()      -> Catch::Session in a main of our own
#pragma once

#include <string>

#include <catch2/catch_all.hpp>

namespace Catch {
inline Matchers::StringContainsMatcher Contains(const std::string& s, CaseSensitive cs = CaseSensitive::Yes) {
  return Matchers::ContainsSubstring(s, cs);
}
using Matchers::EndsWith;
using Matchers::Equals;
using Matchers::StartsWith;
}  // namespace Catch

using Catch::Approx;

#ifdef CATCH_CONFIG_MAIN
int main(int argc, char* argv[]) { return Catch::Session().run(argc, argv); }
#endif
