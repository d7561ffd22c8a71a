#include "html/html_style.h"

namespace gpuaccept::report {

// Colours follow the usual traffic-light meaning, dark enough on their tints to pass
// WCAG AA contrast; everything else stays neutral so the statuses stand out.
const char* report_css() {
  return R"CSS(
:root {
  --pass: #1a7f37; --pass-bg: #dafbe1;
  --warn: #9a6700; --warn-bg: #fff8c5;
  --fail: #cf222e; --fail-bg: #ffebe9;
  --error: #ffffff; --error-bg: #a40e26;
  --skip: #57606a; --skip-bg: #eaeef2;
  --text: #1f2328; --muted: #656d76; --line: #d0d7de; --page: #f6f8fa; --card: #ffffff;
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--page); color: var(--text);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
.page-header { background: #24292f; color: #fff; padding: 18px 32px 0; }
.page-header .title { font-size: 22px; font-weight: 600; }
.page-header .subtitle { color: #c9d1d9; margin-top: 2px; }
.page-header code { color: #fff; }
nav { display: flex; gap: 4px; margin-top: 14px; flex-wrap: wrap; }
nav a { color: #c9d1d9; text-decoration: none; padding: 8px 12px; border-radius: 6px 6px 0 0; }
nav a:hover { background: rgba(255,255,255,.1); color: #fff; }
main { max-width: 1440px; margin: 0 auto; padding: 24px 32px 48px; }
section { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 18px 22px; margin-bottom: 20px; }
h2 { font-size: 18px; margin: 0 0 12px; }
h3 { font-size: 16px; margin: 18px 0 8px; }
h4 { font-size: 13px; margin: 16px 0 6px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
.muted { color: var(--muted); font-weight: normal; }
.ok { color: var(--pass); font-weight: 500; }
footer { text-align: center; color: var(--muted); padding: 16px; font-size: 12px; }

.verdict { display: flex; align-items: center; gap: 28px; border-width: 0; color: #fff; padding: 22px 28px; }
.verdict.pass { background: linear-gradient(135deg, #1a7f37, #2da44e); }
.verdict.warn { background: linear-gradient(135deg, #9a6700, #bf8700); }
.verdict.fail { background: linear-gradient(135deg, #a40e26, #cf222e); }
.verdict.skip { background: linear-gradient(135deg, #57606a, #6e7781); }
.verdict-word { font-size: 64px; font-weight: 800; letter-spacing: .04em; line-height: 1; }
.verdict-note { font-size: 18px; font-weight: 600; margin-bottom: 6px; }
.verdict-counts { margin: 3px 0; }
.verdict .count-label { display: inline-block; min-width: 130px; opacity: .9; }
.verdict .count { background: rgba(255,255,255,.92); }
.verdict-thresholds { margin-top: 8px; opacity: .92; font-size: 13px; }
.verdict-thresholds code { color: #fff; }

.count { display: inline-block; border-radius: 10px; padding: 0 8px; margin: 1px 4px 1px 0; font-size: 12px; font-weight: 600; }
.pill { white-space: nowrap; display: inline-block; min-width: 48px; text-align: center; border-radius: 10px; padding: 1px 8px; font-size: 11.5px; font-weight: 700; letter-spacing: .02em; }
.pill.pass, .count.pass { color: var(--pass); background: var(--pass-bg); }
.pill.warn, .count.warn { color: var(--warn); background: var(--warn-bg); }
.pill.fail, .count.fail { color: var(--fail); background: var(--fail-bg); }
.pill.error, .count.error { color: var(--error); background: var(--error-bg); }
.pill.skip, .count.skip { color: var(--skip); background: var(--skip-bg); }
.rule-note { color: var(--fail); font-size: 12.5px; }
.rule-flag { font-size: 11px; color: var(--muted); margin-left: 4px; }

table { border-collapse: collapse; width: 100%; font-size: 13px; }
th { text-align: left; font-weight: 600; color: var(--muted); background: var(--page); border-bottom: 1px solid var(--line); padding: 6px 10px; white-space: nowrap; }
td { border-bottom: 1px solid #eaeef2; padding: 5px 10px; vertical-align: top; }
tbody tr:hover td { background: #f6f8fa; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.nowrap, td.node-name { white-space: nowrap; }
td.node-name { font-weight: 600; }
td.params { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; color: #424a53; }
td.message { max-width: 560px; overflow-wrap: anywhere; }
td.origin, .origin { color: var(--muted); font-size: 11.5px; }
td.worse { color: var(--fail); font-weight: 600; }
td.where { max-width: 360px; overflow-wrap: anywhere; }
.count-badge { font-weight: 700; white-space: nowrap; }
a.all-of { color: var(--muted); font-size: 12px; white-space: nowrap; }
/* What failed: a row per distinct failure, one line each (issue 39: every one on the first
   screen at 8,192 GPUs); what does not fit is cut (the cell's title and the phase's table hold
   it whole), a long message's whole line shows when clicked. */
table.failures { table-layout: fixed; }
table.failures th:nth-child(1) { width: 76px; }
table.failures th:nth-child(2) { width: 23%; }
table.failures th:nth-child(3) { width: 12%; }
table.failures th:nth-child(4) { width: 11%; }
table.failures th:nth-child(5) { width: 14%; }
table.failures th:nth-child(6) { width: 12%; }
table.failures td { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
td.message details.more { margin: 0; }
td.message details.more summary { display: block; overflow: hidden; text-overflow: ellipsis; white-space: nowrap;
  color: inherit; font-weight: normal; padding: 0; }
td.message details.more[open] summary { white-space: normal; overflow-wrap: anywhere; }
.scroll { overflow-x: auto; }

table.phases td { padding: 8px 10px; }
table.phases a { color: var(--text); font-weight: 600; text-decoration: none; }
.source { font-size: 12.5px; color: var(--muted); }
.source.unreadable, .source.missing, .source.partial { color: var(--fail); }
.source-line { margin: 2px 0; }
.problem { color: var(--fail); font-size: 12.5px; margin: 2px 0 4px; }
details { margin: 6px 0; }
summary { cursor: pointer; color: var(--muted); font-weight: 500; padding: 4px 0; }
details.config pre { background: var(--page); border: 1px solid var(--line); border-radius: 6px; padding: 10px; max-height: 320px; overflow: auto; }
.phase { border-left: 4px solid var(--pass); }
.phase.warn { border-left-color: #d4a72c; }
.phase.fail, .phase.error { border-left-color: var(--fail); }
.phase.skip { border-left-color: var(--line); }
h2.section-heading { margin: 28px 0 12px; }
.unused-rules { font-size: 12.5px; }
.phase h3 { margin-top: 0; }

table.grid { width: auto; }
table.grid td.cell { text-align: center; min-width: 72px; font-size: 11.5px; font-weight: 700; border: 2px solid #fff; border-radius: 4px; }
td.cell.pass { color: var(--pass); background: var(--pass-bg); }
td.cell.warn { color: var(--warn); background: var(--warn-bg); }
td.cell.fail { color: var(--fail); background: var(--fail-bg); }
td.cell.error { color: var(--error); background: var(--error-bg); }
td.cell.skip, td.cell.empty { color: var(--skip); background: var(--skip-bg); }
.outlier { font-size: 12px; }
.notice.warn { color: var(--warn); background: var(--warn-bg); border-left: 4px solid #d4a72c; padding: 4px 12px; margin: 8px 0; }

table.inventory td.differs { background: var(--warn-bg); color: var(--warn); font-weight: 600; }
ul.problems { color: var(--fail); }

.charts { display: flex; flex-wrap: wrap; gap: 16px; }
figure { margin: 0; border: 1px solid #eaeef2; border-radius: 6px; padding: 6px; overflow-x: auto; max-width: 100%; }
svg.chart { display: block; font-family: inherit; }
svg .chart-title { font-size: 13px; font-weight: 600; fill: var(--text); }
svg .chart-note { font-size: 11px; fill: var(--muted); }
svg .tick { font-size: 10.5px; fill: var(--muted); }
svg .axis-label { font-size: 11.5px; fill: var(--muted); }
svg .legend { font-size: 11.5px; fill: var(--text); }
svg .grid { stroke: #eaeef2; stroke-width: 1; }
svg .axis { stroke: #8c959f; stroke-width: 1; }
svg .series { fill: none; stroke-width: 2; }
svg .reference { stroke: #24292f; stroke-width: 1.2; stroke-dasharray: 5 4; }
svg .reference-label { font-size: 11px; fill: #24292f; }
svg rect.bar.pass, svg rect.bar.skip { fill: #4e79a7; }
svg rect.bar.warn { fill: #d4a72c; }
svg rect.bar.fail, svg rect.bar.error { fill: #cf222e; }
)CSS";
}

}  // namespace gpuaccept::report
