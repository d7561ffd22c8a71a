// ArrivalBoard: how a rank whose collective did not finish learns which ranks did not
// arrive, on the shared results filesystem, without any collective (which would hang).
//
// <dir>/rank-NNNNN: one line per rank, "<progress> <heartbeat unix time> <pid> <host>",
//   rewritten by the rank's watchdog thread: `progress` is a counter that every rank
//   advances through the same sequence of sync points, so a rank behind the others is
//   one that did not arrive; the heartbeat time tells a dead rank (SIGKILLed, node gone:
//   its file stops changing) from a live one that is stuck.
// <dir>/abort: empty until the first rank that gives up writes why; ranks waiting
//   elsewhere read it and stop, instead of each waiting out its own timeout.
//
// Files are opened, written and closed each time: NFS shows a file's new content to other
// clients on close-to-open, and both files exist before anyone reads them (no negative
// lookup caching). A rank with a missing or unreadable file is reported as such.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gpuaccept {

struct ArrivalEntry {
  int rank = -1;
  bool readable = false;    // false: no file yet, or a torn/garbled line
  long long progress = -1;
  double heartbeat_unix = 0;  // wall clock of the last write (seconds since the epoch)
  long pid = 0;
  std::string host;
};

class ArrivalBoard {
 public:
  ArrivalBoard(std::filesystem::path dir, int rank, std::string host);

  // Creates the directory, this rank's file and (create_abort_file: one rank, before any
  // rank reads it) the empty abort file. Throws CallError when the directory is unusable.
  void prepare(bool create_abort_file);
  const std::filesystem::path& dir() const { return dir_; }

  // Rewrites this rank's line. Never throws (a heartbeat must not end the phase).
  void write(long long progress, double now_unix) const;
  std::vector<ArrivalEntry> read(const std::vector<int>& ranks) const;

  // Writes `why` into the abort file (the last writer wins; any reason is good enough).
  void raise_abort(const std::string& why) const;
  // The abort file's text, when some rank wrote one.
  std::optional<std::string> abort_reason() const;

  // Deletes the directory (after a phase ended normally).
  void remove() const;

  static std::string format_line(long long progress, double now_unix, long pid, const std::string& host);
  static ArrivalEntry parse_line(int rank, const std::string& line);

 private:
  std::filesystem::path dir_;
  int rank_;
  std::string host_;
  std::filesystem::path file_for(int rank) const;
  std::filesystem::path abort_file() const { return dir_ / "abort"; }
};

// A rank of `expected` that had not reached `target` (or could not be read).
struct Laggard {
  int rank = -1;
  std::string host;
  bool readable = false;
  long long progress = -1;
  double silent_s = 0;  // seconds since its last heartbeat
  bool dead = false;    // silent for more than dead_after_s: the process is gone
};

// Pure: the ranks of `expected` whose progress is below `target`, in rank order.
std::vector<Laggard> find_laggards(const std::vector<ArrivalEntry>& board, const std::vector<int>& expected,
                                   long long target, double now_unix, double dead_after_s);

// Pure: the lowest rank of `expected` that reached `target` (-1: none did). When several
// ranks notice the same failure, this one records it, so the report gets one FAIL.
int first_arrived(const std::vector<ArrivalEntry>& board, const std::vector<int>& expected, long long target);

// "3 (node2, no heartbeat for 45 s: dead?), 5 (node3, alive, at sync point 17)".
// `describe_progress` turns a progress value into words (e.g. the step it stands for).
std::string describe_laggards(const std::vector<Laggard>& laggards,
                              const std::function<std::string(long long)>& describe_progress);

// After a fault: what to say of the ranks of `laggards` (find_laggards). Once the wait has
// lasted dead_after_s, "ranks that did not arrive: <describe_laggards>". Sooner (an NCCL
// error moments after a peer died, before the live ranks posted their progress and before the
// dead one's silence shows), only the ranks not yet seen there, without a verdict on each.
// No laggards: every rank arrived, so the operation itself failed.
std::string describe_fault_laggards(const std::vector<Laggard>& laggards, double waited_s, double dead_after_s,
                                    const std::function<std::string(long long)>& describe_progress);

}  // namespace gpuaccept
