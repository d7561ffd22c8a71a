#include "slurm/slurm_api.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <type_traits>

#include <fmt/format.h>
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "common/error.h"

namespace gpuaccept {

namespace {

// libslurm reports its errors in errno: slurm_get_errno() was only `return errno` in 22.05
// and is gone by 24.11, so errno serves every release.
std::string slurm_error_text() { return slurm_strerror(errno); }

[[noreturn]] void raise_slurm(const char* call, const std::source_location& loc = std::source_location::current()) {
  raise_call_error("Slurm", call, slurm_error_text(), loc);
}

// Where libslurm will look for slurm.conf: $SLURM_CONF (set by slurmd in configless
// jobs too), else the compiled-in default.
std::string slurm_conf_path() {
  if (const char* c = std::getenv("SLURM_CONF"); c && *c) return c;
#ifdef SLURM_CONFIG_FILE
  return SLURM_CONFIG_FILE;
#else
  return "/etc/slurm/slurm.conf";
#endif
}

// What slurm_hostlist_create returns: `hostlist_t` in 22.05, where hostlist_t was the
// pointer; `hostlist_t *` in 24.11, where hostlist_t is the struct. Both are a
// `struct hostlist *`, so the handle is spelled by what the function returns.
using HostlistHandle = decltype(slurm_hostlist_create(nullptr));
struct HostlistDeleter {
  void operator()(HostlistHandle h) const { slurm_hostlist_destroy(h); }
};
using Hostlist = std::unique_ptr<std::remove_pointer_t<HostlistHandle>, HostlistDeleter>;

struct NodeMsgDeleter {
  void operator()(node_info_msg_t* m) const { slurm_free_node_info_msg(m); }
};
struct CtlConfDeleter {
  void operator()(slurm_conf_t* c) const { slurm_free_ctl_conf(c); }
};
struct PartMsgDeleter {
  void operator()(partition_info_msg_t* m) const { slurm_free_partition_info_msg(m); }
};

}  // namespace

void ensure_slurm_initialized() {
  static std::once_flag once;
  static std::string failure;
  std::call_once(once, [] {
    const std::string conf = slurm_conf_path();
    if (access(conf.c_str(), R_OK) != 0) {
      failure = fmt::format("cannot read {} ({}); set SLURM_CONF", conf, errno_text());
      return;
    }
    slurm_init(nullptr);
  });
  if (!failure.empty()) raise_call_error("Slurm", "slurm_init", failure);
}

std::string slurm_ping_controller() {
  ensure_slurm_initialized();
  if (slurm_ping(0) == SLURM_SUCCESS) return "";
  return slurm_error_text();
}

std::string slurm_controller_version() {
  ensure_slurm_initialized();
  slurm_conf_t* raw = nullptr;
  if (slurm_load_ctl_conf(0, &raw) != SLURM_SUCCESS) raise_slurm("slurm_load_ctl_conf");
  std::unique_ptr<slurm_conf_t, CtlConfDeleter> conf(raw);
  return conf->version ? conf->version : "";
}

std::vector<SlurmPartition> slurm_partitions() {
  ensure_slurm_initialized();
  partition_info_msg_t* raw = nullptr;
  if (slurm_load_partitions(0, &raw, SHOW_ALL) != SLURM_SUCCESS) raise_slurm("slurm_load_partitions");
  std::unique_ptr<partition_info_msg_t, PartMsgDeleter> msg(raw);
  std::vector<SlurmPartition> out;
  for (std::uint32_t i = 0; i < msg->record_count; ++i) {
    const partition_info_t& p = msg->partition_array[i];
    if (p.name) out.push_back({p.name, p.state_up});
  }
  return out;
}

std::optional<SlurmPartition> find_partition(const std::vector<SlurmPartition>& all, const std::string& name) {
  const auto it = std::find_if(all.begin(), all.end(), [&](const SlurmPartition& p) { return p.name == name; });
  if (it == all.end()) return std::nullopt;
  return *it;
}

std::vector<SlurmNode> slurm_nodes(const std::vector<std::string>& names) {
  ensure_slurm_initialized();
  node_info_msg_t* raw = nullptr;
  if (slurm_load_node(0, &raw, SHOW_ALL) != SLURM_SUCCESS) raise_slurm("slurm_load_node");
  std::unique_ptr<node_info_msg_t, NodeMsgDeleter> msg(raw);
  std::vector<SlurmNode> out;
  for (const auto& name : names) {
    SlurmNode n{name, NODE_STATE_UNKNOWN, "not known to the controller", ""};
    for (std::uint32_t i = 0; i < msg->record_count; ++i) {
      const node_info_t& ni = msg->node_array[i];
      if (!ni.name || name != ni.name) continue;
      n.state = ni.node_state;
      n.reason = ni.reason ? ni.reason : "";
      n.gres = ni.gres ? ni.gres : "";
      break;
    }
    out.push_back(std::move(n));
  }
  return out;
}

std::vector<std::string> expand_hostlist(const std::string& nodelist) {
  std::vector<std::string> out;
  if (nodelist.empty()) return out;
  Hostlist hl(slurm_hostlist_create(nodelist.c_str()));
  if (!hl) raise_slurm("slurm_hostlist_create");
  while (char* host = slurm_hostlist_shift(hl.get())) {
    out.emplace_back(host);
    std::free(host);  // slurm_hostlist_shift: "the caller must free the returned string"
  }
  return out;
}

void drain_node(const std::string& node, const std::string& reason) {
  ensure_slurm_initialized();
  update_node_msg_t msg;
  slurm_init_update_node_msg(&msg);
  std::string names = node, why = reason;  // the message's fields are char*, never written through
  msg.node_names = names.data();
  msg.node_state = NODE_STATE_DRAIN;
  msg.reason = why.data();
  msg.reason_uid = static_cast<std::uint32_t>(::getuid());
  if (slurm_update_node(&msg) != SLURM_SUCCESS)
    raise_call_error("Slurm", "slurm_update_node",
                     fmt::format("drain {}: {}", node, slurm_error_text()));
}

std::string compress_hostlist(const std::vector<std::string>& names) {
  if (names.empty()) return {};
  Hostlist hl(slurm_hostlist_create(nullptr));
  if (!hl) raise_slurm("slurm_hostlist_create");
  for (const auto& n : names)
    if (slurm_hostlist_push_host(hl.get(), n.c_str()) == 0) raise_slurm("slurm_hostlist_push_host");
  slurm_hostlist_uniq(hl.get());  // sorts, then drops duplicates
  // slurm_hostlist_ranged_string (in every release; its _malloc form is gone by 24.11): -1
  // when the buffer is too small, so grow until the whole list fits.
  std::string buf(std::max<std::size_t>(256, 16 * names.size()), '\0');
  for (;;) {
    const ssize_t n = slurm_hostlist_ranged_string(hl.get(), buf.size(), buf.data());
    if (n >= 0 && static_cast<std::size_t>(n) < buf.size()) return buf.substr(0, static_cast<std::size_t>(n));
    if (buf.size() > (std::size_t{1} << 30)) raise_call_error("Slurm", "slurm_hostlist_ranged_string", "hostlist longer than 1 GiB");
    buf.resize(buf.size() * 2);
  }
}

std::string node_state_name(std::uint32_t state) {
  static const char* base[] = {"UNKNOWN", "DOWN", "IDLE", "ALLOCATED", "ERROR", "MIXED", "FUTURE"};
  const std::uint32_t b = state & NODE_STATE_BASE;
  std::string s = b < std::size(base) ? base[b] : fmt::format("STATE{}", b);
  const std::pair<std::uint32_t, const char*> flags[] = {
      {NODE_STATE_DRAIN, "DRAIN"},           {NODE_STATE_FAIL, "FAIL"},
      {NODE_STATE_NO_RESPOND, "NOT_RESPONDING"}, {NODE_STATE_POWERED_DOWN, "POWERED_DOWN"},
      {NODE_STATE_COMPLETING, "COMPLETING"}, {NODE_STATE_MAINT, "MAINT"},
      {NODE_STATE_REBOOT_REQUESTED, "REBOOT_REQUESTED"}};
  for (const auto& [bit, name] : flags)
    if (state & bit) s += fmt::format("+{}", name);
  return s;
}

std::string node_state_problem(std::uint32_t state) {
  const std::uint32_t b = state & NODE_STATE_BASE;
  if (b == NODE_STATE_DOWN) return "node is DOWN";
  if (b == NODE_STATE_UNKNOWN || b == NODE_STATE_FUTURE) return "node state is unknown";
  if (b == NODE_STATE_ERROR) return "node is in ERROR";
  if (state & NODE_STATE_DRAIN) return b == NODE_STATE_IDLE ? "node is DRAINED" : "node is DRAINING";
  if (state & NODE_STATE_FAIL) return "node is FAILING";
  if (state & NODE_STATE_NO_RESPOND) return "node is not responding";
  if (state & NODE_STATE_POWERED_DOWN) return "node is powered down";
  return "";
}

std::string partition_state_name(std::uint16_t state_up) {
  switch (state_up) {
    case PARTITION_UP: return "UP";
    case PARTITION_DOWN: return "DOWN";
    case PARTITION_DRAIN: return "DRAIN";
    case PARTITION_INACTIVE: return "INACTIVE";
  }
  return fmt::format("state {}", state_up);
}

}  // namespace gpuaccept
