#include "discover/version_checks.h"

#include <algorithm>
#include <sstream>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "slurm/slurm_release.h"

namespace gpuaccept::discover {
using nlohmann::json;

namespace {

// "2.28.3" -> {2, 28, 3}; "OpenPMIx 5.0.7" -> {5, 0, 7}; missing parts are 0; nullopt when
// the text holds no number.
std::optional<std::tuple<int, int, int>> numeric_version(const std::string& text) {
  const auto first = text.find_first_of("0123456789");
  if (first == std::string::npos) return std::nullopt;
  int v[3] = {0, 0, 0};
  std::istringstream in(text.substr(first));
  char dot = 0;
  for (int i = 0; i < 3; ++i) {
    if (!(in >> v[i])) break;
    if (!(in >> dot) || dot != '.') break;
  }
  return std::tuple{v[0], v[1], v[2]};
}

const json* library(const json& inv, const std::string& name) {
  const auto it = inv.find("libraries");
  if (it == inv.end() || !it->is_array()) return nullptr;
  for (const auto& l : *it)
    if (l.value("name", "") == name) return &l;
  return nullptr;
}

std::string from(const json& lib) {
  const std::string p = lib.value("path", "");
  return p.empty() ? "" : " (" + p + ")";
}

Record node_record(const std::string& node) {
  Record r;
  r.rank = kJobLevel;
  r.node = node;
  r.test = "library_versions";
  return r;
}

}  // namespace

std::vector<Record> check_library_versions(const std::vector<json>& inventories) {
  std::vector<Record> out;
  std::vector<std::string> seen;
  for (const auto& inv : inventories) {
    const std::string host = inv.value("host", "?");
    if (std::find(seen.begin(), seen.end(), host) != seen.end()) continue;  // one verdict per node
    seen.push_back(host);
    Record r = node_record(host);
    if (!library(inv, "nccl")) {
      r.status = Status::Skip;
      r.message = "the inventory lists no libraries (written by an older gpuaccept)";
      out.push_back(std::move(r));
      continue;
    }
    std::vector<std::string> problems, loaded;
    auto older_than_headers = [&](const char* name, const char* what, bool major_only) {
      const json* lib = library(inv, name);
      if (!lib) return;
      const auto c = numeric_version(lib->value("compiled", "")), l = numeric_version(lib->value("loaded", ""));
      loaded.push_back(fmt::format("{} {}", what, lib->value("loaded", "?")));
      if (!c || !l) return;
      const bool older = major_only ? std::get<0>(*l) < std::get<0>(*c)
                                    : std::tie(std::get<0>(*l), std::get<1>(*l)) < std::tie(std::get<0>(*c), std::get<1>(*c));
      if (older)
        problems.push_back(fmt::format("{} {} loaded{} is older than the {} headers it was built against: load the {} "
                                       "it was built with, or rebuild against this one",
                                       what, lib->value("loaded", ""), from(*lib), lib->value("compiled", ""), what));
    };
    older_than_headers("nccl", "NCCL", false);
    older_than_headers("pmix", "PMIx", true);
    if (const json* rt = library(inv, "cuda_runtime"); rt) {
      loaded.push_back(fmt::format("CUDA runtime {}", rt->value("loaded", "?")));
      const json* drv = library(inv, "cuda_driver");
      const auto r_v = numeric_version(rt->value("loaded", "")), d_v = drv ? numeric_version(drv->value("loaded", "")) : std::nullopt;
      if (r_v && d_v && std::tie(std::get<0>(*d_v), std::get<1>(*d_v)) < std::tie(std::get<0>(*r_v), std::get<1>(*r_v)))
        problems.push_back(fmt::format("the driver runs CUDA up to {}, older than the CUDA runtime {} loaded{}: update "
                                       "the driver or build with a CUDA of at most {}",
                                       drv->value("loaded", ""), rt->value("loaded", ""), from(*rt), drv->value("loaded", "")));
    }
    r.status = problems.empty() ? Status::Pass : Status::Fail;
    r.message = problems.empty() ? fmt::format("{}", fmt::join(loaded, ", ")) : fmt::format("{}", fmt::join(problems, "; "));
    out.push_back(std::move(r));
  }
  return out;
}

Record check_slurm_client(const std::string& client_version, const ControllerAnswer& answer) {
  Record r;
  r.rank = kJobLevel;
  r.test = "slurm_client";
  r.params = {{"client", client_version}};
  const auto client = parse_slurm_release(client_version);
  if (!answer.version) {
    if (!answer.refused.empty()) {
      r.status = Status::Fail;
      r.message = fmt::format("slurmctld refused libslurm {}: {}; rebuild gpuaccept against the cluster's own Slurm "
                              "(SLURM_ROOT=<its prefix>, README: Build on your cluster)",
                              client_version, answer.refused);
    } else {
      r.status = Status::Skip;
      r.message = fmt::format("controller not asked: {}", answer.why_unknown);
    }
    return r;
  }
  r.params["controller"] = *answer.version;
  const auto controller = parse_slurm_release(*answer.version);
  if (!client || !controller) {
    r.status = Status::Skip;
    r.message = fmt::format("cannot read a Slurm release from '{}' and '{}'", client_version, *answer.version);
    return r;
  }
  const ClientVerdict v = judge_slurm_client(*client, *controller);
  r.status = v.kind == ClientVerdict::Kind::Compatible ? Status::Pass
             : v.kind == ClientVerdict::Kind::Unknown  ? Status::Skip
                                                       : Status::Fail;
  r.message = v.message;
  return r;
}

}  // namespace gpuaccept::discover
