// The inventory table from discover: what each node is, with the cells where a node
// differs from most others highlighted (the usual cause of one slow node).
#include <fmt/format.h>

#include "html/html_escape.h"
#include "html/html_sections.h"
#include "html/html_util.h"

namespace gpuaccept::report {

std::string inventory_section(const Report& r) {
  const InventoryTable& t = r.inventory;
  std::string problems;
  for (const auto& p : t.problems) problems += "<li>" + html_escape(p) + "</li>";
  if (!problems.empty()) problems = R"(<ul class="problems">)" + problems + "</ul>";
  if (t.nodes.empty())
    return fmt::format(R"(<section id="inventory"><h2>Inventory</h2><p class="muted">No inventory from the discover phase in this run.</p>{}</section>
)",
                       problems);

  std::string head = "<th>host</th><th>ranks</th>";
  for (const auto& c : t.columns) head += "<th>" + html_escape(c) + "</th>";
  std::string rows;
  int differing = 0;
  for (const auto& n : t.nodes) {
    rows += "<tr>" + cell(n.host, "node-name") + cell(std::to_string(n.ranks), "num");
    for (const auto& c : t.columns) {
      const auto it = n.fields.find(c);
      const std::string value = it == n.fields.end() ? "" : it->second;
      if (t.differs(n, c)) {
        ++differing;
        const std::string norm = t.majority(c);
        rows += fmt::format(R"(<td class="differs" title="{}">{}</td>)",
                            html_escape(norm.empty() ? "nodes disagree, no majority" : "most nodes: " + norm),
                            html_escape(value.empty() ? "(unknown)" : value));
      } else {
        rows += cell(value);
      }
    }
    rows += "</tr>\n";
  }
  const std::string note =
      differing == 0 ? fmt::format("All {} nodes agree in every column.", t.nodes.size())
                     : fmt::format("{} cell(s) differ from what most nodes have (highlighted; hover for the norm).", differing);
  return fmt::format(R"(<section id="inventory"><h2>Inventory</h2>
<p class="muted">{}</p>
<div class="scroll"><table class="inventory"><thead><tr>{}</tr></thead>
<tbody>
{}</tbody></table></div>{}
</section>
)",
                     note, head, rows, problems);
}

}  // namespace gpuaccept::report
