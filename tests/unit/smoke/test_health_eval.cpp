#include <catch2/catch.hpp>

#include "smoke/health_eval.h"

using namespace gpuaccept;
using namespace gpuaccept::smoke;

TEST_CASE("ECC: volatile uncorrectable errors fail, lifetime ones only when not remapped", "[smoke][health]") {
  CHECK(eval_ecc(0ull, 0ull, RemappedRows{}).status == Status::Pass);
  CHECK(eval_ecc(2ull, 2ull, RemappedRows{}).status == Status::Fail);
  CHECK(eval_ecc(0ull, 3ull, RemappedRows{0, 3, false, false}).status == Status::Pass);
  CHECK(eval_ecc(0ull, 3ull, RemappedRows{0, 3, true, false}).status == Status::Fail);
  CHECK(eval_ecc(0ull, 3ull, std::nullopt).status == Status::Fail);  // pre-Ampere: no remapping
  CHECK(eval_ecc(std::nullopt, std::nullopt, std::nullopt).status == Status::Skip);
  CHECK(eval_ecc(0ull, 0ull, std::nullopt).params.at("item") == "ecc_uncorrected");
}

TEST_CASE("row remapping: pending or failed remaps fail", "[smoke][health]") {
  CHECK(eval_row_remap(RemappedRows{1, 0, false, false}).status == Status::Pass);
  const Record pending = eval_row_remap(RemappedRows{0, 1, true, false});
  CHECK(pending.status == Status::Fail);
  CHECK_THAT(pending.message, Catch::Contains("reset"));
  CHECK(eval_row_remap(RemappedRows{0, 1, false, true}).status == Status::Fail);
  CHECK(eval_row_remap(std::nullopt).status == Status::Skip);
}

TEST_CASE("retired pages only where row remapping is absent", "[smoke][health]") {
  CHECK_FALSE(eval_retired_pages(std::nullopt, true).has_value());
  CHECK(eval_retired_pages(std::nullopt, false)->status == Status::Skip);
  CHECK(eval_retired_pages(RetiredPages{2, 1, false}, false)->status == Status::Pass);
  CHECK(eval_retired_pages(RetiredPages{0, 1, true}, false)->status == Status::Fail);
}

TEST_CASE("clock events: faults fail, idle passes", "[smoke][health]") {
  CHECK(eval_clock_events(0x1ull).status == Status::Pass);
  const Record r = eval_clock_events(0x1ull | 0x40ull);
  CHECK(r.status == Status::Fail);
  CHECK_THAT(r.message, Catch::Contains("hw_thermal_slowdown"));
}

TEST_CASE("temperature limit: config, else slowdown - 5, else 85", "[smoke][health]") {
  CHECK(eval_temperature(40u, 90u, std::nullopt).status == Status::Pass);
  CHECK(eval_temperature(86u, 90u, std::nullopt).status == Status::Fail);
  CHECK(eval_temperature(86u, std::nullopt, std::nullopt).status == Status::Fail);
  CHECK(eval_temperature(86u, 90u, 95).status == Status::Pass);
  CHECK(eval_temperature(std::nullopt, 90u, std::nullopt).status == Status::Skip);
}

TEST_CASE("PCIe: narrow links fail and a lower generation only under load", "[smoke][health]") {
  PcieLink l;
  l.gen = 1, l.width = 16, l.max_gen = 5, l.max_width = 16;
  CHECK(eval_pcie(l, false).status == Status::Pass);  // idle GPUs train down
  CHECK(eval_pcie(l, true).status == Status::Fail);
  l.gen = 5, l.width = 8;
  const Record narrow = eval_pcie(l, false);
  CHECK(narrow.status == Status::Fail);
  CHECK_THAT(narrow.message, Catch::Contains("x8 of x16"));
  CHECK(eval_pcie(PcieLink{}, true).status == Status::Skip);
}

TEST_CASE("NVLink: down links and recoveries fail", "[smoke][health]") {
  std::vector<NvLinkStatus> links(4);
  for (int i = 0; i < 4; ++i) links[i].link = i, links[i].active = true;
  CHECK(eval_nvlink(links, 100).status == Status::Pass);
  links[2].active = false;
  const Record down = eval_nvlink(links, 100);
  CHECK(down.status == Status::Fail);
  CHECK_THAT(down.message, Catch::Contains("links 2 down"));
  links[2].active = true;
  links[1].errors[0] = 50;  // replays under the threshold
  CHECK(eval_nvlink(links, 100).status == Status::Pass);
  links[1].errors[1] = 1;  // a recovery
  CHECK(eval_nvlink(links, 100).status == Status::Fail);
  for (auto& l : links) l.active = false;
  CHECK(eval_nvlink(links, 100).status == Status::Skip);
  CHECK(eval_nvlink({}, 100).status == Status::Skip);
}
