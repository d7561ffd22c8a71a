#include <catch2/catch.hpp>

#include "smoke/cpu_set.h"

using namespace gpuaccept::smoke;

TEST_CASE("parse_cpu_list reads the list form", "[smoke][cpu]") {
  CHECK(parse_cpu_list("0-3,8") == CpuSet{0, 1, 2, 3, 8});
  CHECK(parse_cpu_list("5") == CpuSet{5});
  CHECK(parse_cpu_list("") == CpuSet{});
  CHECK(parse_cpu_list("8,0-1,1\n") == CpuSet{0, 1, 8});  // unsorted, duplicate, trailing newline
  CHECK_FALSE(parse_cpu_list("3-1"));
  CHECK_FALSE(parse_cpu_list("a"));
  CHECK_FALSE(parse_cpu_list("1-"));
}

TEST_CASE("cpu set overlap and containment", "[smoke][cpu]") {
  CHECK(cpu_intersection({0, 1, 2, 3}, {2, 3, 4}) == CpuSet{2, 3});
  CHECK(cpu_intersection({0, 1}, {2, 3}).empty());
  CHECK(cpu_subset({0, 1}, {0, 1, 2}));
  CHECK_FALSE(cpu_subset({0, 5}, {0, 1, 2}));
  CHECK_FALSE(current_affinity().empty());
}
