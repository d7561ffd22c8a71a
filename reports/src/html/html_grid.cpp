// The node x GPU grid: a glance at where in the fleet the trouble is.
#include <fmt/format.h>

#include "html/html_escape.h"
#include "html/html_sections.h"
#include "html/html_util.h"

namespace gpuaccept::report {

namespace {

constexpr std::size_t kNotesInTooltip = 12;

std::string grid_cell(const GridCell* c, const std::string& label) {
  if (!c) return R"(<td class="cell empty">–</td>)";
  std::string tip;
  for (std::size_t i = 0; i < c->notes.size() && i < kNotesInTooltip; ++i) tip += c->notes[i] + "\n";
  if (c->notes.size() > kNotesInTooltip) tip += fmt::format("… and {} more", c->notes.size() - kNotesInTooltip);
  if (tip.empty()) tip = fmt::format("{}: {} checks and rule verdicts, all PASS", label, c->tally.total());
  return fmt::format(R"(<td class="cell {}" title="{}">{}{}</td>)", css_class(c->level()), html_escape(tip),
                     to_string(c->level()), c->outlier ? R"( <span class="outlier" title="fleet outlier">◆</span>)" : "");
}

}  // namespace

std::string node_grid_section(const Report& r) {
  const NodeGrid& g = r.grid;
  if (g.nodes.empty())
    return R"(<section id="nodes"><h2>Nodes and GPUs</h2><p class="muted">No record names a node.</p></section>
)";
  std::string head = "<th>node</th>";
  for (int i = 0; i < g.gpus; ++i) head += fmt::format("<th>GPU {}</th>", i);
  head += "<th>node-level</th>";
  std::string rows;
  for (const auto& node : g.nodes) {
    rows += "<tr>" + cell(node, "node-name");
    for (int i = 0; i < g.gpus; ++i) rows += grid_cell(g.cell(node, i), fmt::format("{} GPU {}", node, i));
    rows += grid_cell(g.cell(node, kNodeColumn), node) + "</tr>\n";
  }
  // GPUs that share a column: the grid cannot say which of them a cell means; the records can
  // (their UUIDs). Written before GPUs were numbered on their node.
  std::string ambiguous;
  if (!g.ambiguous.empty()) {
    std::string items;
    for (const auto& a : g.ambiguous) items += "<li>" + html_escape(a) + "</li>";
    ambiguous = fmt::format(R"(<div class="notice warn"><p>Some GPU columns mix several GPUs: the records name different GPUs (UUIDs) by one index. The results were written by a build that numbered each rank's GPU by its CUDA index, which Slurm's binding makes 0 on every rank, or the driver's GPU list was hidden from the ranks. Tell the GPUs apart by their UUIDs (<code>gpu_uuid</code> in summary.json).</p><ul>{}</ul></div>
)",
                            items);
  }
  return fmt::format(R"(<section id="nodes"><h2>Nodes and GPUs</h2>
<p class="muted">Worst level of every check and rule verdict about each GPU; hover a cell for what is wrong. ◆ marks a fleet outlier: a value well off the median of its peers.</p>
{}<table class="grid"><thead><tr>{}</tr></thead>
<tbody>
{}</tbody></table>
</section>
)",
                     ambiguous, head, rows);
}

}  // namespace gpuaccept::report
