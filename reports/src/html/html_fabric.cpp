// The Fabric section (model/fabric.h): each node's RDMA ports and the checks about them, the
// port error counters that moved during the run, the transport NCCL used between nodes, the
// busbw across nodes against the ports' line rate, the 8 B latency and the node-pair matrix.
// Every string from the run goes through cell() or html_escape.
#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "html/html_escape.h"
#include "html/html_sections.h"
#include "html/html_util.h"
#include "model/slowest_pair.h"
#include "thresholds/record_label.h"

namespace gpuaccept::report {

namespace {

// Past this many nodes the pair matrix gives way to a list of the slowest pairs.
constexpr std::size_t kMaxMatrixNodes = 32;
constexpr std::size_t kSlowestPairsListed = 20;
// Past this many nodes the port table lists only the nodes that are not PASS.
constexpr std::size_t kMaxNodeRows = 64;

std::string param(const Record& r, const char* key) {
  const auto it = r.params.find(key);
  return it == r.params.end() ? std::string() : it->second;
}

std::string pill_cell(Level l) { return "<td>" + pill(l) + "</td>"; }

std::string port_rows(const FabricNode& n) {
  const std::string head = cell(n.host, "node-name") + pill_cell(n.level);
  if (n.ports.empty())
    return "<tr>" + head + R"(<td colspan="8" class="muted">no RDMA port in the inventory</td>)" +
           cell(n.gpudirect) + "</tr>\n";
  std::string rows;
  for (const auto& p : n.ports) {
    std::vector<std::string> gpus;
    for (int g : p.nearest_gpus) gpus.push_back(std::to_string(g));
    std::string nearest = fmt::format("{}", fmt::join(gpus, ", "));
    if (!p.gpu_distance.empty()) nearest += (nearest.empty() ? "" : " ") + fmt::format("({})", p.gpu_distance);
    const bool down = p.active && !*p.active;
    rows += "<tr>" + head + cell(p.name(), "nowrap") + cell(p.state, down ? "nowrap worse" : "nowrap") +
            cell(p.phys_state, "nowrap") + cell(p.rate, "nowrap") + cell(p.link_layer) + cell(nearest, "nowrap") +
            cell(fmt::format("{}", fmt::join(p.netdevs, ", "))) + cell(p.pci_bus_id, "nowrap") + cell(n.gpudirect) +
            "</tr>\n";
  }
  return rows;
}

std::string checks_rows(const FabricNode& n) {
  std::string rows;
  for (const auto& r : n.checks)
    if (r.status != Status::Pass)
      rows += "<tr>" + pill_cell(level_of(r.status)) + cell(n.host, "nowrap") + cell(r.test) +
              cell(value_text(r) + (r.unit.empty() ? "" : " " + r.unit), "num") + cell(r.message, "message") + "</tr>\n";
  return rows;
}

std::string ports_part(const Fabric& f) {
  std::string rows, checks;
  std::size_t ports = 0, shown = 0, hidden = 0, passing_checks = 0;
  for (const auto& n : f.nodes) {
    ports += n.ports.size();
    for (const auto& r : n.checks) passing_checks += r.status == Status::Pass ? 1 : 0;
    checks += checks_rows(n);
    if (f.nodes.size() > kMaxNodeRows && n.level == Level::Pass) {
      ++hidden;
      continue;
    }
    rows += port_rows(n);
    ++shown;
  }
  std::string out = fmt::format(R"(<h3>Ports</h3>
<p class="muted">{} RDMA port(s) on {} node(s), from discover's inventory; a node's status is the worst of its port checks (fabric_ports, fabric_rate, gpudirect, hca_loopback) and its counters.{}</p>
<div class="scroll"><table class="fabric-ports"><thead><tr><th>node</th><th>status</th><th>port</th><th>state</th><th>phys state</th><th>rate</th><th>link layer</th><th>nearest GPUs</th><th>netdevs</th><th>PCI</th><th>GPUDirect</th></tr></thead>
<tbody>
{}</tbody></table></div>
)",
                                ports, f.nodes.size(),
                                hidden ? fmt::format(" {} passing node(s) are not listed (summary.json has every one).", hidden) : "",
                                rows);
  if (!checks.empty())
    out += fmt::format(R"(<table class="fabric-checks"><thead><tr><th>status</th><th>node</th><th>check</th><th>value</th><th>message</th></tr></thead>
<tbody>
{}</tbody></table>
)",
                       checks);
  if (passing_checks > 0) out += fmt::format(R"(<p class="muted">{} port check(s) passed.</p>)", passing_checks) + "\n";
  return out;
}

std::string counters_part(const Fabric& f) {
  const PortCounterJudgement& c = f.counters;
  std::string out = "<h3>Port error counters</h3>\n";
  if (!c.skipped.empty()) {
    out += fmt::format(R"(<p>{} <span class="muted">{}</span></p>)", pill(Level::Skip), html_escape(c.skipped)) + "\n";
  } else {
    out += fmt::format(
        R"(<p>{} <span class="muted">{} port(s) on {} node(s) read from {} document(s), from the start of each node's earliest phase to the end of its latest: {} counter(s) rose, {} note(s).</span></p>)",
        pill(c.level()), c.ports, c.nodes, c.documents,
        std::count_if(c.changes.begin(), c.changes.end(), [](const auto& x) { return x.level == Level::Fail; }),
        std::count_if(c.changes.begin(), c.changes.end(), [](const auto& x) { return x.level == Level::Warn; }));
    out += "\n";
  }
  if (!c.changes.empty()) {
    std::string rows;
    for (const auto& x : c.changes)
      rows += "<tr>" + pill_cell(x.level) + cell(x.node, "nowrap") + cell(x.port, "nowrap") + cell(x.counter) +
              cell(std::to_string(x.from), "num") + cell(std::to_string(x.to), "num") +
              cell(x.rise > 0 ? fmt::format("+{}", x.rise) : "", "num") + cell(x.message, "message") + "</tr>\n";
    out += fmt::format(R"(<table class="fabric-counters"><thead><tr><th>status</th><th>node</th><th>port</th><th>counter</th><th>from</th><th>to</th><th>rose by</th><th>what</th></tr></thead>
<tbody>
{}</tbody></table>
)",
                       rows);
  }
  std::string problems;
  for (const auto& p : c.problems) problems += "<li>" + html_escape(p) + "</li>";
  if (!problems.empty()) out += R"(<ul class="problems">)" + problems + "</ul>\n";
  return out;
}

std::string transports_part(const Fabric& f) {
  std::string out = "<h3>Transport NCCL used between nodes</h3>\n";
  if (f.transports.empty())
    return out + R"(<p class="muted">No nccl_transport record: nccl-scaling did not run across nodes, or its file is from before issue 37.</p>)" "\n";
  std::string rows;
  for (const auto& r : f.transports)
    rows += "<tr>" + pill_cell(level_of(r.status)) + cell(param(r, "scale"), "nowrap") + cell(param(r, "observed")) +
            cell(param(r, "hosts_socket")) + cell(r.message, "message") + "</tr>\n";
  return out + fmt::format(R"(<table class="fabric-transports"><thead><tr><th>status</th><th>scale</th><th>NCCL used</th><th>hosts over sockets</th><th>message</th></tr></thead>
<tbody>
{}</tbody></table>
)",
                           rows);
}

std::string bound_text(const FabricMeasurement& m) { return m.verdict ? demand_text(*m.verdict) : "-"; }
std::string rule_text(const FabricMeasurement& m) { return m.verdict ? m.verdict->rule.name : "no rule"; }

// Under a table whose rows failed across nodes: the pair of nodes that slows them most.
std::string slowest_pair_note(const Fabric& f, const std::vector<FabricMeasurement>& rows) {
  const bool failed = std::any_of(rows.begin(), rows.end(), [](const auto& m) { return fails_run(m.level); });
  if (!failed || !f.slowest_pair) return {};
  return fmt::format(R"(<p class="rule-note">{} (each FAIL's message in "What failed" names it too).</p>)",
                     html_escape(slowest_pair_text(*f.slowest_pair))) +
         "\n";
}

std::string bandwidth_part(const Fabric& f) {
  std::string out = "<h3>Bandwidth between nodes against the line rate</h3>\n";
  if (f.bandwidth.empty())
    return out + R"(<p class="muted">No all_reduce, all_gather or reduce_scatter across nodes from 256 MiB in this run.</p>)" "\n";
  std::string rows;
  for (const auto& m : f.bandwidth) {
    const Record& r = m.record;
    const auto line = line_rate_gbps_of(r);
    rows += "<tr>" + pill_cell(m.level) + cell(r.test) + cell(param(r, "scale")) + cell(param(r, "ranks"), "num") +
            cell(format_bytes(std::stod(param(r, "bytes"))), "num") + cell(format_value(r.value) + " GB/s", "num") +
            cell(line ? format_bound(*line) + " Gb/s" : "-", "num") +
            cell(line ? format_value(*line / 8) + " GB/s" : "-", "num") + cell(param(r, "line_rate_source")) +
            cell(param(r, "fabric")) + cell(bound_text(m), "nowrap") + cell(rule_text(m)) + "</tr>\n";
  }
  return out + fmt::format(R"(<p class="muted">The largest size from 256 MiB per collective and scale, the lowest busbw there (every dtype and placement). Expected: the line rate of the ports nearest the group's GPUs on its most limited node, in GB/s (Gb/s ÷ 8), which nccl-tests' busbw is comparable with (docs/fabric.md).</p>
<div class="scroll"><table class="fabric-bandwidth"><thead><tr><th>status</th><th>collective</th><th>scale</th><th>ranks</th><th>size</th><th>busbw</th><th>line rate</th><th>expected</th><th>line rate from</th><th>fabric</th><th>bound</th><th>rule</th></tr></thead>
<tbody>
{}</tbody></table></div>
{})",
                           rows, slowest_pair_note(f, f.bandwidth));
}

std::string latency_part(const Fabric& f) {
  std::string out = "<h3>Latency between nodes (all_reduce 8 B)</h3>\n";
  if (f.latency.empty()) return out + R"(<p class="muted">No 8 B all_reduce across nodes in this run.</p>)" "\n";
  std::string rows;
  for (const auto& m : f.latency) {
    const Record& r = m.record;
    rows += "<tr>" + pill_cell(m.level) + cell(param(r, "scale")) + cell(param(r, "ranks"), "num") + cell(param(r, "dtype")) +
            cell(param(r, "inplace") == "1" ? "in place" : "out of place") + cell(format_value(r.value) + " us", "num") +
            cell(param(r, "fabric")) + cell(bound_text(m), "nowrap") + cell(rule_text(m)) + "</tr>\n";
  }
  return out + fmt::format(R"(<table class="fabric-latency"><thead><tr><th>status</th><th>scale</th><th>ranks</th><th>dtype</th><th>placement</th><th>time</th><th>fabric</th><th>bound</th><th>rule</th></tr></thead>
<tbody>
{}</tbody></table>
{})",
                           rows, slowest_pair_note(f, f.latency));
}

std::string pairs_part(const Fabric& f) {
  std::string out = "<h3>Node pairs (all_reduce busbw of two whole nodes)</h3>\n";
  if (f.node_pairs.empty()) return out + R"(<p class="muted">No node pair measured in this run.</p>)" "\n";
  if (f.slowest_pair)
    out += fmt::format(R"(<p>{}</p>)", html_escape(slowest_pair_text(*f.slowest_pair))) + "\n";
  // The nodes: the report's order, then any the pairs name that it does not know.
  std::vector<std::string> hosts;
  const auto add = [&](const std::string& h) {
    if (std::find(hosts.begin(), hosts.end(), h) == hosts.end()) hosts.push_back(h);
  };
  std::map<std::string, bool> in_pairs;
  for (const auto& r : f.node_pairs) in_pairs[param(r, "a")] = in_pairs[param(r, "b")] = true;
  for (const auto& n : f.nodes)
    if (in_pairs.count(n.host)) add(n.host);
  for (const auto& r : f.node_pairs) add(param(r, "a")), add(param(r, "b"));
  if (hosts.size() > kMaxMatrixNodes) {
    std::vector<const Record*> sorted;
    for (const auto& r : f.node_pairs)
      if (r.has_value()) sorted.push_back(&r);
    std::sort(sorted.begin(), sorted.end(), [](const Record* a, const Record* b) { return a->value < b->value; });
    if (sorted.size() > kSlowestPairsListed) sorted.resize(kSlowestPairsListed);
    std::string rows;
    for (const Record* r : sorted)
      rows += "<tr>" + pill_cell(level_of(r->status)) + cell(param(*r, "a"), "nowrap") + cell(param(*r, "b"), "nowrap") +
              cell(format_value(r->value) + " GB/s", "num") + cell(r->message, "message") + "</tr>\n";
    return out + fmt::format(R"(<p class="muted">{} nodes: the {} slowest of {} pairs (summary.json has every one).</p>
<table class="fabric-pairs"><thead><tr><th>status</th><th>a</th><th>b</th><th>busbw</th><th>message</th></tr></thead>
<tbody>
{}</tbody></table>
)",
                             hosts.size(), sorted.size(), f.node_pairs.size(), rows);
  }
  std::map<std::pair<std::string, std::string>, const Record*> at;
  for (const auto& r : f.node_pairs) at[{param(r, "a"), param(r, "b")}] = at[{param(r, "b"), param(r, "a")}] = &r;
  std::string head = "<th></th>";
  for (const auto& h : hosts) head += "<th>" + html_escape(h) + "</th>";
  std::string rows;
  for (const auto& a : hosts) {
    rows += "<tr>" + cell(a, "node-name");
    for (const auto& b : hosts) {
      const auto it = at.find({a, b});
      if (a == b || it == at.end()) {
        rows += R"(<td class="cell empty"></td>)";
        continue;
      }
      const Record& r = *it->second;
      rows += fmt::format(R"(<td class="cell {}" title="{}">{}</td>)", css_class(level_of(r.status)), html_escape(r.message),
                          html_escape(r.has_value() ? format_value(r.value) : to_string(level_of(r.status))));
    }
    rows += "</tr>\n";
  }
  return out + fmt::format(R"(<div class="scroll"><table class="grid fabric-pairs"><thead><tr>{}</tr></thead>
<tbody>
{}</tbody></table></div>
)",
                           head, rows);
}

}  // namespace

std::string fabric_section(const Report& r) {
  const Fabric& f = r.fabric;
  if (f.empty())
    return R"(<section id="fabric"><h2>Fabric between nodes</h2><p class="muted">No fabric data in this run: no RDMA port in discover's inventory, no port counters, no measurement across nodes.</p></section>
)";
  return fmt::format(R"(<section id="fabric"><h2>Fabric between nodes</h2>
{}{}{}{}{}{}</section>
)",
                     ports_part(f), counters_part(f), transports_part(f), bandwidth_part(f), latency_part(f),
                     pairs_part(f));
}

}  // namespace gpuaccept::report
