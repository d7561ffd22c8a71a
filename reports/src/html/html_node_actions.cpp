// Which nodes to take out and which to watch (model/node_actions.h), with the commands
// that act on them, so the reader of the report does not retype node names.
#include <fmt/format.h>

#include "html/html_escape.h"
#include "html/html_sections.h"
#include "output/drain_files.h"

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

}  // namespace

std::string node_actions_section(const Report& r) {
  const NodeActions& a = r.node_actions;
  if (a.drain.empty() && a.watch.empty()) return "";
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
  return fmt::format(R"(<section id="node-actions"><h2>Nodes to take out</h2>
<p class="muted">Written beside this report as <code>bad-nodes.txt</code>, <code>watch-nodes.txt</code> (Slurm hostlists) and <code>drain.sh</code>.</p>
{}</section>
)",
                     body);
}

}  // namespace gpuaccept::report
