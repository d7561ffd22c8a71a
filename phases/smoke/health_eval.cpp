#include "smoke/health_eval.h"


#include <fmt/format.h>
#include <fmt/ranges.h>

namespace gpuaccept::smoke {

namespace {
Record unsupported(const char* item, const char* what) {
  Record r = health_record(item);
  r.status = Status::Skip;
  r.message = fmt::format("{} not reported by NVML for this GPU", what);
  return r;
}
}  // namespace

Record health_record(const char* item) {
  Record r;
  r.test = "gpu_health";
  r.params = {{"item", item}};
  return r;
}

Record eval_ecc(std::optional<unsigned long long> volatile_unc, std::optional<unsigned long long> aggregate_unc,
                const std::optional<RemappedRows>& remap) {
  if (!volatile_unc && !aggregate_unc) return unsupported("ecc_uncorrected", "ECC error counts (ECC off?) are");
  Record r = health_record("ecc_uncorrected");
  r.metric = "errors";
  r.unit = "count";
  r.value = static_cast<double>(volatile_unc.value_or(0));
  const unsigned long long vol = volatile_unc.value_or(0), agg = aggregate_unc.value_or(0);
  const bool remap_handled = remap && !remap->pending && !remap->failure;
  if (vol > 0) {
    r.status = Status::Fail;
    r.message = fmt::format("{} uncorrectable ECC errors since the driver loaded ({} lifetime)", vol, agg);
  } else if (agg > 0 && !remap_handled) {
    r.status = Status::Fail;
    r.message = fmt::format("{} lifetime uncorrectable ECC errors, not covered by row remapping", agg);
  } else {
    r.message = agg > 0 ? fmt::format("no volatile uncorrectable errors; {} lifetime ones, handled by row remapping", agg)
                        : "no uncorrectable ECC errors";
  }
  return r;
}

Record eval_row_remap(const std::optional<RemappedRows>& remap) {
  if (!remap) return unsupported("row_remap", "row remapping is");
  Record r = health_record("row_remap");
  r.metric = "rows";
  r.unit = "count";
  r.value = remap->uncorrected;
  r.params["corrected"] = std::to_string(remap->corrected);
  if (remap->failure) {
    r.status = Status::Fail;
    r.message = fmt::format("a row remap failed: the GPU has no spare rows left ({} rows remapped for uncorrectable, "
                            "{} for correctable errors)",
                            remap->uncorrected, remap->corrected);
  } else if (remap->pending) {
    r.status = Status::Fail;
    r.message = fmt::format("a row remap is pending: reset the GPU ({} uncorrectable, {} correctable rows remapped)",
                            remap->uncorrected, remap->corrected);
  } else {
    r.message = fmt::format("{} rows remapped for uncorrectable, {} for correctable errors; none pending",
                            remap->uncorrected, remap->corrected);
  }
  return r;
}

std::optional<Record> eval_retired_pages(const std::optional<RetiredPages>& pages, bool has_row_remap) {
  if (!pages) {
    if (has_row_remap) return std::nullopt;
    return unsupported("retired_pages", "page retirement is");
  }
  Record r = health_record("retired_pages");
  r.metric = "pages";
  r.unit = "count";
  r.value = pages->single_bit + pages->double_bit;
  if (pages->pending) {
    r.status = Status::Fail;
    r.message = fmt::format("a page retirement is pending: reboot ({} double-bit, {} single-bit pages retired)",
                            pages->double_bit, pages->single_bit);
  } else {
    r.message = fmt::format("{} double-bit, {} single-bit pages retired; none pending", pages->double_bit,
                            pages->single_bit);
  }
  return r;
}

Record eval_clock_events(std::optional<std::uint64_t> bits) {
  if (!bits) return unsupported("throttle", "clock event reasons are");
  Record r = health_record("throttle");
  r.metric = "reasons";
  r.unit = "count";
  r.value = static_cast<double>(clock_event_names(*bits).size());
  r.params["bits"] = fmt::format("{:#x}", *bits);
  if (const std::uint64_t faults = clock_event_fault_bits(*bits)) {
    r.status = Status::Fail;
    r.message = fmt::format("clocks held down by {} (all reasons: {})", describe_clock_events(faults),
                            describe_clock_events(*bits));
  } else {
    r.message = fmt::format("clock event reasons: {}", describe_clock_events(*bits));
  }
  return r;
}

Record eval_temperature(std::optional<unsigned> temp_c, std::optional<unsigned> slowdown_c,
                        std::optional<int> configured_max_c) {
  if (!temp_c) return unsupported("temperature", "the GPU temperature is");
  Record r = health_record("temperature");
  r.metric = "temperature";
  r.unit = "C";
  r.value = *temp_c;
  const int limit = configured_max_c ? *configured_max_c
                    : slowdown_c     ? static_cast<int>(*slowdown_c) - 5
                                     : 85;
  const char* source = configured_max_c ? "smoke.max_temperature_c"
                       : slowdown_c     ? "5 C below the slowdown threshold"
                                        : "default";
  r.params["limit_c"] = std::to_string(limit);
  r.status = static_cast<int>(*temp_c) >= limit ? Status::Fail : Status::Pass;
  r.message = fmt::format("{} C, limit {} C ({})", *temp_c, limit, source);
  return r;
}

Record eval_power(std::optional<unsigned> power_mw, std::optional<unsigned> limit_mw) {
  if (!power_mw) return unsupported("power", "the power draw is");
  Record r = health_record("power");
  r.metric = "power";
  r.unit = "W";
  r.value = *power_mw / 1000.0;
  r.message = limit_mw ? fmt::format("{:.0f} W of a {:.0f} W limit", r.value, *limit_mw / 1000.0)
                       : fmt::format("{:.0f} W", r.value);
  return r;
}

Record eval_clock(const char* item, std::optional<unsigned> mhz, std::optional<unsigned> max_mhz) {
  if (!mhz) return unsupported(item, "the clock is");
  Record r = health_record(item);
  r.metric = "clock";
  r.unit = "MHz";
  r.value = *mhz;
  r.message = max_mhz ? fmt::format("{} MHz of max {} MHz", *mhz, *max_mhz) : fmt::format("{} MHz", *mhz);
  return r;
}

Record eval_pcie(const PcieLink& l, bool under_load) {
  if (!l.gen || !l.width) return unsupported("pcie_link", "the PCIe link is");
  Record r = health_record("pcie_link");
  r.metric = "generation";
  r.unit = "count";
  r.value = *l.gen;
  r.params["width"] = std::to_string(*l.width);
  r.params["under_load"] = under_load ? "1" : "0";
  std::vector<std::string> problems;
  if (l.max_width && *l.width < *l.max_width) problems.push_back(fmt::format("width x{} of x{}", *l.width, *l.max_width));
  if (l.max_gen && *l.gen < *l.max_gen && under_load)
    problems.push_back(fmt::format("Gen{} of Gen{} under load", *l.gen, *l.max_gen));
  const std::string gpu_max =
      l.gpu_max_gen && l.max_gen && *l.gpu_max_gen > *l.max_gen ? fmt::format(" (GPU could do Gen{})", *l.gpu_max_gen) : "";
  const std::string now = fmt::format("Gen{} x{}, max Gen{} x{}{}", *l.gen, *l.width,
                                      l.max_gen ? std::to_string(*l.max_gen) : "?",
                                      l.max_width ? std::to_string(*l.max_width) : "?", gpu_max);
  if (!problems.empty()) {
    r.status = Status::Fail;
    r.message = fmt::format("PCIe link degraded: {} ({})", fmt::join(problems, ", "), now);
  } else {
    r.message = now + (l.max_gen && *l.gen < *l.max_gen ? " (idle: links train down when unused)" : "");
  }
  return r;
}

namespace {

// Error counts per link and counter, as "link 3 crc_data=5"; `base` (same links, earlier)
// is subtracted when given. Counters a GPU does not report count as zero.
struct NvLinkCounts {
  unsigned long long total = 0, replays = 0, recoveries = 0;
  unsigned long long worst_crc = 0;  // the most CRC errors (flit + data) on one link
  int worst_crc_link = -1;
  std::vector<std::string> items;
  bool reported = false;  // some counter was read at all
};

NvLinkCounts count_nvlink_errors(const std::vector<NvLinkStatus>& links, const std::vector<NvLinkStatus>* base) {
  NvLinkCounts n;
  for (std::size_t i = 0; i < links.size(); ++i) {
    unsigned long long crc = 0;
    for (int c = 0; c < kNvLinkErrorCounters; ++c) {
      if (links[i].errors[c]) n.reported = true;
      const unsigned long long now = links[i].errors[c].value_or(0);
      const unsigned long long then = base && i < base->size() ? (*base)[i].errors[c].value_or(0) : 0;
      const unsigned long long v = now > then ? now - then : 0;  // a counter reset reads as no new errors
      if (v == 0) continue;
      n.total += v;
      if (c == 0) n.replays += v;
      if (c == 1) n.recoveries += v;
      if (c == 2 || c == 3) crc += v;
      n.items.push_back(fmt::format("link {} {}={}", links[i].link, nvlink_error_counter_names()[c], v));
    }
    if (crc > n.worst_crc) n.worst_crc = crc, n.worst_crc_link = links[i].link;
  }
  return n;
}

std::vector<int> down_links(const std::vector<NvLinkStatus>& links, int* active) {
  std::vector<int> down;
  *active = 0;
  for (const auto& l : links) {
    if (l.active) ++*active;
    else down.push_back(l.link);
  }
  return down;
}

std::string listed(const std::vector<std::string>& items) {
  return items.empty() ? "" : fmt::format(" ({})", fmt::join(items, ", "));
}

}  // namespace

Record eval_nvlink(const std::vector<NvLinkStatus>& links) {
  if (links.empty()) return unsupported("nvlink", "NVLink is");
  Record r = health_record("nvlink");
  r.metric = "errors";
  r.unit = "count";
  int active = 0;
  const std::vector<int> down = down_links(links, &active);
  const NvLinkCounts n = count_nvlink_errors(links, nullptr);
  r.value = static_cast<double>(n.total);
  r.params["active_links"] = std::to_string(active);
  r.params["links"] = std::to_string(links.size());
  if (active == 0) {
    r.status = Status::Skip;
    r.message = fmt::format("none of {} NVLinks is active (a PCIe-only GPU, or NVLink is down)", links.size());
    return r;
  }
  std::vector<std::string> problems;
  if (!down.empty()) problems.push_back(fmt::format("links {} down ({} of {} active)", fmt::join(down, ","), active, links.size()));
  if (n.recoveries > 0) problems.push_back(fmt::format("{} link recoveries since the driver loaded", n.recoveries));
  const std::string counts = n.reported ? listed(n.items) : " (error counters not reported by this GPU)";
  r.status = problems.empty() ? Status::Pass : Status::Fail;
  r.message = problems.empty()
                  ? fmt::format("{} of {} links active, {} errors since the driver loaded{}", active, links.size(), n.total, counts)
                  : fmt::format("{}{}", fmt::join(problems, "; "), counts);
  return r;
}

Record eval_nvlink_traffic(const std::vector<NvLinkStatus>& before, const std::vector<NvLinkStatus>& after,
                           double seconds, double crc_per_second_limit) {
  if (after.empty()) return unsupported("nvlink_traffic", "NVLink is");
  Record r = health_record("nvlink_traffic");
  r.metric = "crc_rate";
  r.unit = "errors/s";
  int active_before = 0, active = 0;
  down_links(before, &active_before);
  const std::vector<int> down = down_links(after, &active);
  const NvLinkCounts n = count_nvlink_errors(after, &before);
  r.params["active_links"] = std::to_string(active);
  r.params["seconds"] = fmt::format("{:.2f}", seconds);
  if (active_before == 0) {
    r.status = Status::Skip;
    r.message = "no NVLink was active: nothing carried the traffic";
    return r;
  }
  if (!n.reported) {
    r.status = Status::Skip;
    r.message = "this GPU reports no NVLink error counters";
    return r;
  }
  // The worst link's CRC rate (flit + data): one bad lane shows on its link, not in a sum.
  const double rate = seconds > 0 ? static_cast<double>(n.worst_crc) / seconds : 0.0;
  r.value = rate;
  std::vector<std::string> problems;
  if (active < active_before) problems.push_back(fmt::format("links {} down after the traffic ({} of {} active before)",
                                                             fmt::join(down, ","), active_before, before.size()));
  if (n.recoveries > 0) problems.push_back(fmt::format("{} link recoveries during the traffic", n.recoveries));
  if (n.replays > 0) problems.push_back(fmt::format("{} data-link replays during the traffic", n.replays));
  if (rate > crc_per_second_limit)
    problems.push_back(fmt::format("link {} gained {} CRC errors in {:.2f} s ({:.0f}/s > smoke.nvlink_crc_per_second {:g})",
                                   n.worst_crc_link, n.worst_crc, seconds, rate, crc_per_second_limit));
  r.status = problems.empty() ? Status::Pass : Status::Fail;
  const std::string what = fmt::format("{} errors gained on {} active links in {:.2f} s of traffic{}", n.total, active,
                                       seconds, listed(n.items));
  r.message = problems.empty()
                  ? fmt::format("worst link {:.0f} CRC errors/s (limit {:g}); {}", rate, crc_per_second_limit, what)
                  : fmt::format("{}; {}", fmt::join(problems, "; "), what);
  return r;
}

}  // namespace gpuaccept::smoke
