// Which nodes to take out and which to watch (model/node_actions.h), with the commands
// that act on them, so the reader of the report does not retype node names.
#include <algorithm>

#include <fmt/format.h>

#include "html/html_escape.h"
#include "html/html_sections.h"
#include "output/drain_files.h"
#include "slurm/slurm_api.h"

namespace gpuaccept::report {

namespace {

std::string action_rows(const std::vector<NodeAction>& list) {
  std::string rows;
  for (const auto& a : list)
    rows += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td></tr>\n", html_escape(a.node), a.problems,
                        html_escape(a.first_problem));
  return rows;
}

std::string action_table(const char* title, const std::vector<NodeAction>& list) {
  return fmt::format(R"(<h3>{} <code>{}</code></h3>
<table><thead><tr><th>node</th><th>problems</th><th>the first</th></tr></thead>
<tbody>
{}</tbody></table>
)",
                     title, html_escape(hostlist_of(list)), action_rows(list));
}

// The nodes that passed every phase, the command that hands them back, and why the others
// are held back (model/good_nodes.h).
std::string hand_back_part(const Report& r) {
  const GoodNodes& g = r.good_nodes;
  std::string body;
  if (!g.nodes.empty())
    body += fmt::format(R"(<h3>Hand back <code>{list}</code></h3>
<p>Every phase ran on these nodes and passed there. Resume those that are drained (a drain set after the run ended stays){res} (<code>resume.sh</code> beside this report):</p>
<pre>make -f Makefile.slurm resume RUN={dir}</pre>
)",
                        fmt::arg("list", html_escape(compress_hostlist(g.nodes))),
                        fmt::arg("res", g.reservation.empty()
                                            ? std::string()
                                            : ", and take them out of the run's reservation <code>" +
                                                  html_escape(g.reservation) + "</code> if it is for maintenance"),
                        fmt::arg("dir", html_escape(shell_quote(r.run_dir))));
  if (!g.held_back.empty()) {
    // One row per reason: a run without GPUs holds back a thousand nodes for one reason.
    std::vector<std::pair<std::string, std::vector<std::string>>> by_why;
    for (const auto& h : g.held_back) {
      auto it = std::find_if(by_why.begin(), by_why.end(), [&](const auto& w) { return w.first == h.why; });
      if (it == by_why.end()) it = by_why.insert(by_why.end(), {h.why, {}});
      it->second.push_back(h.node);
    }
    std::string rows;
    for (const auto& [why, nodes] : by_why)
      rows += fmt::format("<tr><td>{}</td><td>{}</td></tr>\n", html_escape(compress_hostlist(nodes)), html_escape(why));
    body += fmt::format(R"(<h3>Not handed back</h3>
<table><thead><tr><th>nodes</th><th>why</th></tr></thead>
<tbody>
{}</tbody></table>
)",
                        rows);
  }
  return body;
}

}  // namespace

std::string node_actions_section(const Report& r) {
  const NodeActions& a = r.node_actions;
  if (a.drain.empty() && a.watch.empty() && r.good_nodes.nodes.empty() && r.good_nodes.held_back.empty()) return "";
  std::string body;
  if (!a.drain.empty()) {
    body += action_table("Drain", a.drain);
    body += fmt::format(R"(<p>Take them out (the reason quotes the first problem; <code>drain.sh</code> beside this report):</p>
<pre>make -f Makefile.slurm drain RUN={dir}</pre>
<p>Run the acceptance again without them, or only on them after repair:</p>
<pre>make -f Makefile.slurm acceptance EXCLUDE_FROM={dir}
make -f Makefile.slurm acceptance ONLY_FROM={dir}</pre>
)",
                        fmt::arg("dir", html_escape(shell_quote(r.run_dir))));
  }
  if (!a.watch.empty())
    body += action_table("Watch (fleet outliers or warnings only; not drained)", a.watch);
  if (a.unattributed_failures > 0)
    body += fmt::format(R"(<p class="muted">{} failure(s) are about the whole job or a file and name no single node: see the phases below.</p>
)",
                        a.unattributed_failures);
  body += hand_back_part(r);
  return fmt::format(R"(<section id="node-actions"><h2>Nodes to take out and to hand back</h2>
<p class="muted">Written beside this report as <code>bad-nodes.txt</code>, <code>watch-nodes.txt</code>, <code>good-nodes.txt</code> (Slurm hostlists), <code>drain.sh</code> and <code>resume.sh</code>.</p>
{}</section>
)",
                     body);
}

}  // namespace gpuaccept::report
