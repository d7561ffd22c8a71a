#include "output/resume_files.h"

#include <ctime>

#include <fmt/format.h>

#include "output/drain_files.h"
#include "slurm/slurm_api.h"

namespace gpuaccept::report {

namespace {

constexpr std::size_t kHeldBackListed = 20;  // held-back nodes named in resume.sh's comment

// The shell functions resume.sh calls, one per node and one for the reservation. A drain set
// after the run ended knows something the run does not (a health check, Slurm's own "Kill task
// failed", a person): it stays. sinfo prints the drain's time in local time, as `date -d` reads it.
constexpr const char* kResumeFunctions = R"SH(resume_drained() {
  node=$1
  state=$(scontrol show node "$node" 2>/dev/null | sed -n 's/^ *State=\([^ ]*\).*/\1/p')
  case $state in
    '') echo "gpuaccept run $run: $node: Slurm does not know it (scontrol show node): left alone" >&2; return 0 ;;
    *DRAIN*) ;;
    *) echo "gpuaccept run $run: $node is $state, not drained: nothing to resume"; return 0 ;;
  esac
  reason=$(sinfo -h -N -n "$node" -o '%E' | head -n 1)
  since=$(sinfo -h -N -n "$node" -o '%H' | head -n 1)
  at=$(date -d "$since" +%s 2>/dev/null || true)
  if [ -z "$at" ] || [ "$at" -gt "$run_ended" ]; then
    echo "gpuaccept run $run: $node left drained: drained at $since, after the run ended ($run_ended_text), for '$reason'; resume it by hand once that is understood: scontrol update NodeName=$node State=RESUME"
    return 0
  fi
  scontrol update NodeName="$node" State=RESUME
  echo "gpuaccept run $run: resumed $node (drained at $since for '$reason'): it passed every phase of the run"
}

release_from_reservation() {
  res=$1
  good=$(scontrol show hostnames "$2")
  if ! info=$(scontrol show reservation "$res" 2>/dev/null); then
    echo "gpuaccept run $run: reservation $res no longer exists: nothing to take the nodes out of"
    return 0
  fi
  flags=$(printf '%s\n' "$info" | sed -n 's/.*Flags=\([^ ]*\).*/\1/p')
  case ,$flags, in
    *,MAINT,*) ;;
    *) echo "gpuaccept run $run: reservation $res is not for maintenance (Flags=$flags): its nodes stay in it"; return 0 ;;
  esac
  held=$(scontrol show hostnames "$(printf '%s\n' "$info" | sed -n 's/^ *Nodes=\([^ ]*\).*/\1/p')")
  keep=$(printf '%s\n' "$held" | grep -vxF "$good" || true)
  out=$(printf '%s\n' "$held" | grep -xF "$good" || true)
  if [ -z "$out" ]; then
    echo "gpuaccept run $run: no good node is in reservation $res any more"
  elif [ -z "$keep" ]; then
    scontrol delete ReservationName="$res"
    echo "gpuaccept run $run: deleted reservation $res: every node in it passed ($(printf '%s\n' "$out" | paste -sd, -))"
  else
    scontrol update ReservationName="$res" Nodes="$(scontrol show hostlist "$(printf '%s\n' "$keep" | paste -sd, -)")" >/dev/null
    echo "gpuaccept run $run: took $(printf '%s\n' "$out" | paste -sd, -) out of reservation $res; it keeps $(printf '%s\n' "$keep" | paste -sd, -)"
  fi
}
)SH";

}  // namespace

std::string good_nodes_file_text(const GoodNodes& good) {
  return good.nodes.empty() ? std::string() : compress_hostlist(good.nodes) + "\n";
}

std::optional<long long> utc_seconds(std::string_view iso8601) {
  std::tm tm{};
  char zone = 0;
  const std::string text(iso8601);
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%c", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec, &zone) != 7 || zone != 'Z')
    return std::nullopt;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<long long>(::timegm(&tm));
}

std::string resume_script_text(std::string_view run_id, std::string_view run_dir, const GoodNodes& good) {
  std::string s = fmt::format(
      "#!/bin/sh\n"
      "# Hands back the nodes that passed every phase of gpuaccept run {id} (good-nodes.txt; the evidence\n"
      "# is in {dir}/report.html). Never run by the report: `make -f Makefile.slurm resume RUN={dir}`\n"
      "# runs it, as the operator's deliberate step. For each node:\n"
      "#   drained before the run ended: resumed (State=RESUME);\n"
      "#   drained after the run ended: left drained with its reason (that drain knows something the\n"
      "#     run does not);\n"
      "#   in the run's maintenance reservation (Flags=MAINT): taken out of it, and the reservation\n"
      "#     deleted once no node is left in it.\n"
      "# Slurm drops a reason given with State=RESUME: this script's output says why each node went\n"
      "# back (make resume keeps it in {dir}/resume.log).\n"
      "set -eu\n",
      fmt::arg("id", run_id), fmt::arg("dir", run_dir));
  if (good.nodes.empty()) {
    s += "# Held back:\n";
    for (std::size_t i = 0; i < good.held_back.size() && i < kHeldBackListed; ++i) {
      std::string why = good.held_back[i].node + ": " + good.held_back[i].why;
      for (char& c : why)  // a comment line: no line break, no control character
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = ' ';
      s += "#   " + why + "\n";
    }
    if (good.held_back.size() > kHeldBackListed)
      s += fmt::format("#   ... and {} more (report.html)\n", good.held_back.size() - kHeldBackListed);
    return s + fmt::format("echo {}\n", shell_quote(fmt::format("gpuaccept run {}: no node passed every phase, none "
                                                                "to hand back (report.html says why)",
                                                                run_id)));
  }
  const auto ended = utc_seconds(good.run_ended);
  s += fmt::format("run={}\nrun_ended={}\nrun_ended_text={}\n\n", shell_quote(run_id), ended.value_or(0),
                   shell_quote(good.run_ended.empty() ? "unknown" : good.run_ended));
  s += kResumeFunctions;
  s += "\n";
  for (const auto& node : good.nodes) s += fmt::format("resume_drained {}\n", shell_quote(node));
  if (!good.reservation.empty())
    s += fmt::format("release_from_reservation {} {}\n", shell_quote(good.reservation),
                     shell_quote(compress_hostlist(good.nodes)));
  s += fmt::format("echo {}\n", shell_quote(fmt::format("gpuaccept run {}: {} node(s) passed every phase: {}", run_id,
                                                        good.nodes.size(), compress_hostlist(good.nodes))));
  return s;
}

}  // namespace gpuaccept::report
