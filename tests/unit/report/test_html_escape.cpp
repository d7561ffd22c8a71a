#include <catch2/catch.hpp>

#include "html/html_escape.h"
#include "html/svg.h"

using namespace gpuaccept::report;

TEST_CASE("html_escape turns markup into text", "[escape]") {
  CHECK(html_escape("<script>alert(1)</script>") == "&lt;script&gt;alert(1)&lt;/script&gt;");
  CHECK(html_escape(R"(a & b "c" 'd')") == "a &amp; b &quot;c&quot; &#39;d&#39;");
  CHECK(html_escape("&lt;") == "&amp;lt;");  // escaped once more, never decoded
  CHECK(html_escape("plain gpa-node1") == "plain gpa-node1");
}

TEST_CASE("html_escape drops control characters XML cannot carry", "[escape]") {
  CHECK(html_escape(std::string("a\x01" "b\x1b[0m\tc\n", 10)) == "ab[0m\tc\n");
  CHECK(html_escape(std::string("x\0y", 3)) == "xy");
}

TEST_CASE("html_escape keeps UTF-8 as it is", "[escape]") {
  CHECK(html_escape("8 × NVIDIA H200 – ok") == "8 × NVIDIA H200 – ok");
}

TEST_CASE("SVG text and tooltips are escaped", "[escape]") {
  Svg svg(100, 100, "<plot>");
  svg.text(1, 2, "<script>alert(1)</script>", "tick").rect(0, 0, 1, 1, "bar", "node \"<b>\"");
  const std::string s = svg.str();
  CHECK_THAT(s, Catch::Contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
  CHECK_THAT(s, Catch::Contains("<title>node &quot;&lt;b&gt;&quot;</title>"));
  CHECK_THAT(s, Catch::Contains(R"(aria-label="&lt;plot&gt;")"));
  CHECK(s.find("<script") == std::string::npos);
  CHECK(s.find("<b>") == std::string::npos);
}
