// The sweep's set-up: what each rank's GPU and links are, whether the job can measure at
// all (GPUs present, one per rank), the plan of steps and buffer sizes, the environment record.
#include "nccl-scaling/sweep.h"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/log.h"
#include "cuda/cuda_check.h"
#include "cuda/rank_device.h"
#include "hw/gpu_inventory.h"
#include "hw/gpudirect.h"
#include "hw/host_inventory.h"
#include "hw/pci_distance.h"
#include "hw/rdma_ports.h"
#include "hw/socket_interface.h"
#include "hw/node_gpu_index.h"
#include "nccl-scaling/nccl_env.h"
#include "nccl-scaling/sweep_internal.h"
#include "common/json_text.h"

namespace gpuaccept::nccl_scaling {

using nlohmann::json;

namespace {

constexpr std::size_t kGiB = std::size_t{1} << 30;

// This rank's GPU and links, as NVML and sysfs describe them.
RankInfo describe_rank(World& world) {
  RankInfo me;
  me.host = world.hostname();
  if (const char* id = std::getenv("NCCL_HOSTID")) me.nccl_host_id = id;
  const RankDevice device = choose_rank_device(world);
  if (device.index < 0) {
    me.error = device.reason;
    return me;
  }
  me.device = device.index;
  me.name = device.name;
  me.uuid = device.uuid;
  me.pci_bus_id = device.pci_bus_id;
  GPUACCEPT_CUDA_CHECK(cudaMemGetInfo(&me.mem_free, &me.mem_total));

  const GpuInventory inv = read_gpu_inventory();
  // The RDMA ports NCCL may use (NCCL_IB_HCA), and which of them are nearest to this GPU:
  // the ports its traffic to other nodes leaves through.
  const char* hca = std::getenv("NCCL_IB_HCA");
  const std::vector<RdmaPort> ports = ports_nccl_may_use(read_rdma_ports(), hca ? hca : "");
  for (const auto& p : ports)
    if (p.active()) me.links.ib = true;
  for (const auto& g : inv.visible) {
    if (g.cuda_index != me.device) continue;
    for (const std::size_t i : ports_nearest_to(location_of(g), ports))
      me.links.nearest_ports.push_back({ports[i].name(), ports[i].rate_gbps, ports[i].link_layer});
    me.links.known = inv.reason.empty() && g.nvml_index >= 0;
    me.links.nvml_index = g.nvml_index;
    me.node_index = g.node_index;
    for (const auto& l : g.nvlinks) {
      if (!l.active) continue;
      const bool to_gpu = std::any_of(inv.node_gpus.begin(), inv.node_gpus.end(),
                                      [&](const GpuInfo& o) { return same_pci_address(o.pci_bus_id, l.remote_bus_id); });
      if (!to_gpu) me.links.nvswitch = true;  // the far end is an NVSwitch
    }
    if (g.nvml_index >= 0 && g.nvml_index < static_cast<int>(inv.nvlink_matrix.size()))
      for (std::size_t j = 0; j < inv.nvlink_matrix[g.nvml_index].size(); ++j)
        if (inv.nvlink_matrix[g.nvml_index][j] > 0) me.links.nvlink_peers.push_back(static_cast<int>(j));
  }
  if (me.links.nearest_ports.empty())  // the GPU unknown to NVML: any active port may serve it
    for (const auto& p : ports)
      if (p.active()) me.links.nearest_ports.push_back({p.name(), p.rate_gbps, p.link_layer});
  me.links.gdr_possible = read_gpudirect_support(me.device).possible();
  const char* ifname = std::getenv("NCCL_SOCKET_IFNAME");
  me.links.ethernet_gbps = socket_interface(ifname ? ifname : "").gbps;
  return me;
}

}  // namespace

bool Sweep::check_devices() {
  const RankInfo me = describe_rank(world_);
  infos_.clear();
  for (const auto& text : world_.allgather_string(json_text(json(me)))) infos_.push_back(json::parse(text).get<RankInfo>());

  // Every rank decides the same from the same data.
  std::vector<int> missing, misconfigured;
  for (int r = 0; r < world_.size(); ++r) {
    const auto& e = infos_[static_cast<std::size_t>(r)].error;
    if (e.starts_with("config: ")) misconfigured.push_back(r);
    else if (!e.empty()) missing.push_back(r);
  }
  if (!missing.empty()) {
    const auto& first = infos_[static_cast<std::size_t>(missing.front())];
    const std::string reason =
        missing.size() == static_cast<std::size_t>(world_.size())
            ? first.error
            : fmt::format("{} (ranks {} of {}, first on {})", first.error, fmt::join(missing, ","), world_.size(), first.host);
    log_rank0("nothing to measure: {}", reason);
    record_skips(reason);
    return false;
  }
  if (!misconfigured.empty()) {
    const auto& first = infos_[static_cast<std::size_t>(misconfigured.front())];
    if (rank_ == 0) job_record("phase", Status::Error, first.error.substr(8), {});
    log_rank0("{}", first.error);
    return false;
  }
  // Two ranks on one GPU: NCCL would fail ("Duplicate GPU detected"); say which.
  const GpuSharing sharing = find_gpu_sharing(infos_);
  if (!sharing.refused.empty()) {
    if (rank_ == 0) job_record("phase", Status::Error, sharing.refused, {});
    log_rank0("{}", sharing.refused);
    return false;
  }
  if (!sharing.joined.empty()) {  // measured, but not acceptable as this GPU's figures
    if (rank_ == 0) job_record("gpu_sharing", Status::Fail, sharing.joined, {});
    log_rank0("{}", sharing.joined);
  }
  if (world_.size() < 2) {
    log_rank0("nothing to measure: one GPU only");
    record_skips("one GPU only");
    return false;
  }
  return true;
}

void Sweep::plan_steps() {
  // Buffers: the largest size, on every rank; what the GPUs can hold decides (nccl-tests
  // reduces maxBytes the same way), leaving room for NCCL's own buffers.
  std::size_t cap = std::numeric_limits<std::size_t>::max();
  for (const auto& i : infos_) {
    const std::size_t reserve = std::max<std::size_t>(2 * kGiB, i.mem_total / 10);
    cap = std::min(cap, i.mem_free > reserve ? (i.mem_free - reserve) / 2 : 0);
  }
  const bool pairs = std::any_of(opts_.scales.begin(), opts_.scales.end(), is_pair_scale);
  const bool collectives = std::any_of(opts_.scales.begin(), opts_.scales.end(), [](Scale s) { return !is_pair_scale(s); });
  sizes_.clear();
  const auto asked = size_sweep(opts_.min_bytes, opts_.max_bytes, opts_.step_factor);
  for (std::size_t s : asked)
    if (s <= cap) sizes_.push_back(s);
  if (collectives && sizes_.size() < asked.size())
    log_rank0("largest size reduced to {} (of {} asked) for GPU memory (free {} on the fullest GPU)",
              sizes_.empty() ? "none" : format_bytes(static_cast<double>(sizes_.back())),
              format_bytes(static_cast<double>(asked.back())), format_bytes(static_cast<double>(cap * 2)));
  if (collectives && sizes_.empty()) throw InputError("no size fits in GPU memory");
  pair_bytes_ = std::min(opts_.pair_bytes, cap);
  buffer_bytes_ = std::max(collectives ? sizes_.back() : 0, pairs ? pair_bytes_ : 0);

  const std::vector<int> gpu_index = gpu_index_of_rank();
  steps_.clear();
  for (Scale s : opts_.scales) {
    const std::string sname(scale_name(s));
    if (is_pair_scale(s)) {
      const PairPlan p = s == Scale::GpuPair ? plan_gpu_pairs(topo_, gpu_index) : plan_node_pairs(topo_, opts_.pair_mode);
      for (std::size_t r = 0; p.runs() && r < p.rounds.size(); ++r)
        steps_.push_back({fmt::format("{} round {}/{}", sname, r + 1, p.rounds.size()), "pair_busbw",
                          {{"scale", sname}, {"bytes", std::to_string(pair_bytes_)}}});
      continue;
    }
    if (!plan_scale(s, topo_, opts_.scales).runs()) continue;
    if (s == Scale::HcaLoopback) {
      steps_.push_back({"hca_loopback", "hca_loopback", {{"scale", sname}, {"bytes", std::to_string(pair_bytes_)}}});
      continue;
    }
    for (const auto& c : opts_.collectives)
      for (Dtype d : opts_.dtypes)
        for (std::size_t size : sizes_)
          steps_.push_back({fmt::format("{} {} {} {}", c, info(d).name, format_bytes(static_cast<double>(size)), sname), c,
                            {{"scale", sname}, {"dtype", std::string(info(d).name)}, {"bytes", std::to_string(size)}}});
  }
}

void Sweep::publish_environment() {
  const RankInfo& me = infos_[static_cast<std::size_t>(rank_)];
  json doc = {
      {"nccl_version", nccl_version()},
      {"nccl_header_version", nccl_header_version()},
      {"blocking", !opts_.nonblocking},
      {"device",
       {{"cuda_index", me.device}, {"name", me.name}, {"uuid", me.uuid}, {"pci_bus_id", me.pci_bus_id},
        {"nvml_index", me.links.nvml_index}, {"node_index", me.node_index}}},
      {"links", {{"nvswitch", me.links.nvswitch}, {"nvlink_peers", me.links.nvlink_peers}, {"ib", me.links.ib}}},
      {"env", nccl_environment()},
      {"config_files", nccl_config_files()},
      {"buffer_bytes", buffer_bytes_},
  };
  ctx_.results.set_document("nccl_env", json_text(doc));
  if (rank_ != 0) return;
  std::string env;
  for (const auto& [k, v] : nccl_environment()) env += fmt::format(" {}={}", k, v);
  log_rank0("NCCL {} (built against {}), {} communicators; NCCL_* on rank 0:{}", nccl_version(), nccl_header_version(),
            opts_.nonblocking ? "nonblocking" : "blocking", env.empty() ? " (none)" : env);
  log_rank0("{} ranks on {} nodes; sizes {}..{} x{}; warmup {}, {} batches of {} iters ({} profile); {} steps; "
            "timeout {:.0f} s per batch",
            world_.size(), world_.node_count(), sizes_.empty() ? "-" : format_bytes(static_cast<double>(sizes_.front())),
            sizes_.empty() ? "-" : format_bytes(static_cast<double>(sizes_.back())), opts_.step_factor,
            opts_.warmup_iters, opts_.batches, opts_.iters, opts_.profile == Profile::Quick ? "quick" : "full",
            steps_.size(), opts_.timeout_s);
}

std::string Sweep::describe_progress(long long progress) const {
  if (progress < 0) return "start-up";
  const auto s = static_cast<std::size_t>(progress / 2);
  if (s >= steps_.size()) return "the end";
  return fmt::format("step {}/{} ({}){}", s + 1, steps_.size(), steps_[s].name,
                     progress % 2 ? ", at its end-of-step sync" : "");
}

std::string Sweep::transport_of(const std::vector<int>& members) const {
  std::vector<RankLinks> links;
  for (const auto& i : infos_) links.push_back(i.links);
  return classify_transport(members, nccl_hosts(infos_), links, net_env_);
}

}  // namespace gpuaccept::nccl_scaling
