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

TEST_CASE("NVLink: down links and recoveries fail; errors since the driver loaded are reported", "[smoke][health]") {
  std::vector<NvLinkStatus> links(4);
  for (int i = 0; i < 4; ++i) links[i].link = i, links[i].active = true;
  CHECK(eval_nvlink(links).status == Status::Pass);
  links[2].active = false;
  const Record down = eval_nvlink(links);
  CHECK(down.status == Status::Fail);
  CHECK_THAT(down.message, Catch::Contains("links 2 down"));
  links[2].active = true;
  links[1].errors[3] = 5000;  // CRC errors since boot: reported, not judged
  const Record crc = eval_nvlink(links);
  CHECK(crc.status == Status::Pass);
  CHECK(crc.value == 5000);
  CHECK_THAT(crc.message, Catch::Contains("link 1 crc_data=5000"));
  links[1].errors[1] = 1;  // a recovery
  CHECK(eval_nvlink(links).status == Status::Fail);
  for (auto& l : links) l.active = false;
  CHECK(eval_nvlink(links).status == Status::Skip);
  CHECK(eval_nvlink({}).status == Status::Skip);
}

TEST_CASE("NVLink under traffic: CRC rate per link, replays, recoveries and lost links fail", "[smoke][health]") {
  std::vector<NvLinkStatus> before(2);
  for (int i = 0; i < 2; ++i) {
    before[i].link = i, before[i].active = true;
    for (auto& e : before[i].errors) e = 300;  // old errors: not this run's
  }
  auto after = before;
  const Record quiet = eval_nvlink_traffic(before, after, 0.5, 100);
  CHECK(quiet.status == Status::Pass);
  CHECK(quiet.value == 0);
  // 30 CRC data + 20 CRC flit errors on link 0 in 0.5 s: 100/s, at the limit; ECC-corrected
  // errors on link 1 do not count toward the rate.
  after[0].errors[3] = *before[0].errors[3] + 30;
  after[0].errors[2] = *before[0].errors[2] + 20;
  after[1].errors[4] = *before[1].errors[4] + 5000;
  const Record busy = eval_nvlink_traffic(before, after, 0.5, 100);
  CHECK(busy.status == Status::Pass);
  CHECK(busy.value == Approx(100));
  CHECK_THAT(busy.message, Catch::Contains("link 1 ecc_data=5000"));
  after[0].errors[3] = *after[0].errors[3] + 1;
  const Record noisy = eval_nvlink_traffic(before, after, 0.5, 100);
  CHECK(noisy.status == Status::Fail);
  CHECK_THAT(noisy.message, Catch::Contains("link 0 gained 51 CRC errors in 0.50 s (102/s > smoke.nvlink_crc_per_second 100)"));
  after = before;
  after[1].errors[0] = *before[1].errors[0] + 1;
  CHECK_THAT(eval_nvlink_traffic(before, after, 1, 100).message, Catch::Contains("1 data-link replays during"));
  after = before;
  after[0].errors[1] = *before[0].errors[1] + 1;
  CHECK_THAT(eval_nvlink_traffic(before, after, 1, 100).message, Catch::Contains("1 link recoveries during"));
  after = before;
  after[1].active = false;
  CHECK_THAT(eval_nvlink_traffic(before, after, 1, 100).message, Catch::Contains("links 1 down after the traffic"));
  std::vector<NvLinkStatus> uncounted(2);
  for (auto& l : uncounted) l.active = true;
  CHECK(eval_nvlink_traffic(uncounted, uncounted, 1, 100).status == Status::Skip);
  CHECK(eval_nvlink_traffic(before, {}, 1, 100).status == Status::Skip);
}
