// Where the phases ran, shown only when they did not all run on one node set
// (model/node_coverage.h): per node, the phases that did not run there.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "html/html_escape.h"
#include "html/html_sections.h"
#include "slurm/slurm_api.h"

namespace gpuaccept::report {

std::string node_coverage_section(const Report& r) {
  const NodeCoverage& c = r.node_coverage;
  if (c.same_nodes()) return "";
  std::string phases;
  for (const auto& p : c.phases)
    phases += fmt::format("<tr><td>{}</td><td><code>{}</code></td></tr>\n", html_escape(p.phase),
                          html_escape(compress_hostlist(p.nodes)));
  std::string missed;
  for (const auto& [node, list] : c.missed)
    missed += fmt::format("<tr><td>{}</td><td>{}</td></tr>\n", html_escape(node),
                          html_escape(fmt::format("{}", fmt::join(list, ", "))));
  return fmt::format(R"(<section id="node-coverage"><h2>Phases on different nodes</h2>
<div class="notice warn"><p>The phases of this run did not all run on the same nodes, so no node was tested by every phase: per-node verdicts, "nodes alike" and the lists of nodes to drain or hand back each speak of the nodes one phase saw. Run the pipeline again: it pins every phase to the nodes its first phase was given (sbatch/pipeline.sbatch).</p></div>
<table><thead><tr><th>phase</th><th>ran on</th></tr></thead>
<tbody>
{}</tbody></table>
<table><thead><tr><th>node</th><th>phases that did not run there</th></tr></thead>
<tbody>
{}</tbody></table>
</section>
)",
                     phases, missed);
}

}  // namespace gpuaccept::report
