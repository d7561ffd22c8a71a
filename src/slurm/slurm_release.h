// Which Slurm releases talk to each other: pure logic, unit-tested (tests/unit/slurm_release_test.cpp).
//
// SchedMD's upgrade guide (slurm.schedmd.com/upgrades.html, "Compatibility Window"): a
// daemon accepts RPCs from clients (commands, libslurm) of its own major release and of the
// two previous ones; from 24.11 on, of the three previous ones (the 6-month cycle). A
// client newer than the controller is not supported. A major release is YY.MM (24.11).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gpuaccept {

struct SlurmRelease {
  int year = 0;   // 24
  int month = 0;  // 11
  std::string text() const;  // "24.11"
  bool operator==(const SlurmRelease&) const = default;
};

// "24.11.5", "24.11", "slurm 24.11.5" -> 24.11; nullopt when no YY.MM is found.
std::optional<SlurmRelease> parse_slurm_release(std::string_view version);

// Major releases from `older` to `newer` (24.05 -> 24.11: 1; 22.05 -> 24.11: 4), counted in
// SchedMD's release sequence (9-month cycle up to 23.11, YY.05 and YY.11 after); nullopt for a
// release that is not in it (a typo, a pre-release numbering).
std::optional<int> releases_between(SlurmRelease older, SlurmRelease newer);

struct ClientVerdict {
  enum class Kind { Compatible, ClientTooOld, ClientTooNew, Unknown } kind = Kind::Unknown;
  std::string message;  // what was compared and, when not compatible, what to rebuild against
};

// May a libslurm of `client` query and update a controller of `controller`?
ClientVerdict judge_slurm_client(SlurmRelease client, SlurmRelease controller);

}  // namespace gpuaccept
