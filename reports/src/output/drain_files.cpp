#include "output/drain_files.h"

#include <fmt/format.h>

#include "slurm/slurm_api.h"

namespace gpuaccept::report {

namespace {

// Bytes [0, n) of `s` without cutting a UTF-8 sequence: back up over continuation bytes.
std::size_t utf8_cut(std::string_view s, std::size_t n) {
  if (n >= s.size()) return s.size();
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return n;
}

}  // namespace

std::string drain_reason(std::string_view run_id, std::string_view first_problem) {
  std::string text = fmt::format("gpuaccept {}: {}", run_id, first_problem);
  for (char& c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = ' ';
  if (text.size() > kMaxDrainReason) text = text.substr(0, utf8_cut(text, kMaxDrainReason - 3)) + "...";
  return text;
}

std::string shell_quote(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

std::string hostlist_of(const std::vector<NodeAction>& actions) {
  std::vector<std::string> names;
  for (const auto& a : actions) names.push_back(a.node);
  return compress_hostlist(names);
}

std::string hostlist_file_text(const std::vector<NodeAction>& actions) {
  return actions.empty() ? std::string() : hostlist_of(actions) + "\n";
}

std::string drain_script_text(std::string_view run_id, std::string_view run_dir, const NodeActions& actions) {
  std::string s = fmt::format(
      "#!/bin/sh\n"
      "# Drains the nodes that failed gpuaccept run {} (written by gpuaccept-report; the evidence is in\n"
      "# {}/report.html). Never run by the report: `make -f Makefile.slurm drain RUN={}` runs it,\n"
      "# as the operator's deliberate step. Undo for one node after repair:\n"
      "#   scontrol update NodeName=<node> State=RESUME\n"
      "set -eu\n",
      run_id, run_dir, run_dir);
  if (actions.drain.empty()) return s + fmt::format("echo 'gpuaccept run {}: no node to drain'\n", run_id);
  for (const auto& a : actions.drain)
    s += fmt::format("scontrol update NodeName={} State=DRAIN Reason={}\n", shell_quote(a.node),
                     shell_quote(drain_reason(run_id, a.first_problem)));
  s += fmt::format("echo {}\n", shell_quote(fmt::format("gpuaccept run {}: drained {} node(s): {}", run_id,
                                                        actions.drain.size(), hostlist_of(actions.drain))));
  return s;
}

}  // namespace gpuaccept::report
