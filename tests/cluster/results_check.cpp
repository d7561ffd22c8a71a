// results-check: asserts facts about a results file for the cluster tests, so the
// shell tests read as a list of expectations:
//   results-check FILE --phase discover --ranks 4 --hosts 2 --document inventory
//   results-check FILE --record-status shared_fs=FAIL --message-contains shared_fs=gpa-node2
//   results-check FILE --all-status SKIP --no-status FAIL
//   results-check FILE --no-status FAIL --except gpu_sharing   (that test may FAIL)
//   results-check FILE --record "all_reduce PASS scale=inter_node dtype=float"
// Exit 0 when every expectation holds; 1 and one line per failed expectation otherwise.
#include <algorithm>
#include <set>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "results/result_file.h"

using namespace gpuaccept;

int main(int argc, char** argv) {
  std::string path, phase;
  int ranks = -1, hosts = -1;
  std::vector<std::string> documents, node_documents, statuses, contains;
  std::string complete, all_status;
  std::vector<std::string> absent_statuses, exempt, wanted;
  CLI::App app{"Checks a gpuaccept results file (for tests)"};
  app.add_option("file", path)->required();
  app.add_option("--phase", phase, "the phase attribute");
  app.add_option("--ranks", ranks, "distinct ranks among the records and world_size");
  app.add_option("--hosts", hosts, "distinct hosts among the rank records");
  app.add_option("--document", documents, "a /documents/<name> with one non-empty entry per rank");
  app.add_option("--node-document", node_documents,
                 "a /documents/<name> with one JSON entry per host, each naming its \"host\" (the node's first rank's)");
  app.add_option("--record-status", statuses, "TEST=STATUS: some record of TEST has STATUS");
  app.add_option("--message-contains", contains, "TEST=TEXT: some record of TEST mentions TEXT");
  app.add_option("--complete", complete, "the complete attribute (yes, partial)");
  app.add_option("--all-status", all_status, "every record has this status");
  app.add_option("--no-status", absent_statuses, "no record has this status");
  app.add_option("--record", wanted, "'TEST STATUS [KEY=VALUE ...]': some record of TEST has STATUS and these params");
  app.add_option("--except", exempt, "a test whose records --all-status and --no-status leave alone");
  CLI11_PARSE(app, argc, argv);

  std::vector<std::string> failures;
  ResultFile f;
  try {
    f = read_result_file(path);
  } catch (const std::exception& e) {
    fmt::print("FAIL {}\n", e.what());
    return 1;
  }
  auto expect = [&](bool ok, const std::string& what) {
    if (!ok) failures.push_back(what);
  };
  std::set<int> seen_ranks;
  std::set<std::string> seen_hosts;
  for (const auto& r : f.records)
    if (r.rank >= 0) {
      seen_ranks.insert(r.rank);
      seen_hosts.insert(r.node);
    }
  if (!phase.empty()) expect(f.attributes["phase"] == phase, fmt::format("phase is '{}', not '{}'", f.attributes["phase"], phase));
  if (!complete.empty())
    expect(f.attributes["complete"] == complete, fmt::format("complete is '{}', not '{}'", f.attributes["complete"], complete));
  if (ranks >= 0) {
    expect(f.attributes["world_size"] == std::to_string(ranks), fmt::format("world_size is {}, not {}", f.attributes["world_size"], ranks));
    expect(static_cast<int>(seen_ranks.size()) == ranks, fmt::format("records from {} ranks, not {}", seen_ranks.size(), ranks));
  }
  if (hosts >= 0)
    expect(static_cast<int>(seen_hosts.size()) == hosts,
           fmt::format("records from {} hosts ({}), not {}", seen_hosts.size(), fmt::join(seen_hosts, ","), hosts));
  for (const auto& name : documents) {
    auto it = f.documents.find(name);
    if (it == f.documents.end()) {
      failures.push_back("no document " + name);
      continue;
    }
    int filled = 0;
    for (const auto& d : it->second) filled += !d.empty() && nlohmann::json::accept(d);
    expect(ranks < 0 || filled == ranks, fmt::format("document {}: {} valid entries, not {}", name, filled, ranks));
  }
  for (const auto& name : node_documents) {
    auto it = f.documents.find(name);
    if (it == f.documents.end()) {
      failures.push_back("no document " + name);
      continue;
    }
    std::set<std::string> doc_hosts;
    for (const auto& d : it->second) {
      if (d.empty()) continue;
      const auto j = nlohmann::json::parse(d, nullptr, false);
      if (!j.is_discarded() && j.is_object()) doc_hosts.insert(j.value("host", ""));
    }
    expect(doc_hosts == seen_hosts || (hosts >= 0 && static_cast<int>(doc_hosts.size()) == hosts),
           fmt::format("document {}: entries from hosts {}, records from {}", name, fmt::join(doc_hosts, ","),
                       fmt::join(seen_hosts, ",")));
  }
  auto split = [](const std::string& s) {
    const auto eq = s.find('=');
    return std::make_pair(s.substr(0, eq), eq == std::string::npos ? "" : s.substr(eq + 1));
  };
  for (const auto& s : statuses) {
    const auto [test, status] = split(s);
    bool found = false;
    for (const auto& r : f.records) found |= r.test == test && to_string(r.status) == status;
    expect(found, fmt::format("no record of {} with status {}", test, status));
  }
  for (const auto& w : wanted) {
    std::istringstream in(w);
    std::string test, status, kv;
    in >> test >> status;
    Params params;
    while (in >> kv) params[kv.substr(0, kv.find('='))] = kv.find('=') == std::string::npos ? "" : kv.substr(kv.find('=') + 1);
    bool found = false;
    for (const auto& r : f.records) {
      if (r.test != test || to_string(r.status) != status) continue;
      bool match = true;
      for (const auto& [k, v] : params) match = match && r.params.count(k) && r.params.at(k) == v;
      found |= match;
    }
    expect(found, fmt::format("no record '{}'", w));
  }
  for (const auto& c : contains) {
    const auto [test, text] = split(c);
    bool found = false;
    for (const auto& r : f.records) found |= r.test == test && r.message.find(text) != std::string::npos;
    expect(found, fmt::format("no record of {} mentions '{}'", test, text));
  }
  for (const auto& r : f.records) {
    if (std::find(exempt.begin(), exempt.end(), r.test) != exempt.end()) continue;
    const std::string st(to_string(r.status));
    if (!all_status.empty() && st != all_status)
      failures.push_back(fmt::format("{} of rank {} is {}, not {}: {}", r.test, r.rank, st, all_status, r.message));
    for (const auto& absent : absent_statuses)
      if (st == absent) failures.push_back(fmt::format("{} of rank {} is {}: {}", r.test, r.rank, st, r.message));
  }
  for (const auto& msg : failures) fmt::print("FAIL {}: {}\n", path, msg);
  if (failures.empty()) fmt::print("ok {}: {} records\n", path, f.records.size());
  return failures.empty() ? 0 : 1;
}
