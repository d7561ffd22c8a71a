// The arrival board on a real directory: heartbeats, torn lines, the abort notice, and
// naming the ranks that did not arrive (dead or stuck).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "cuda/arrival_board.h"

using namespace gpuaccept;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/gpuaccept-arrivals-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
};

std::string step_name(long long p) { return "step " + std::to_string(p); }

}  // namespace

TEST_CASE("ranks write and read each other's progress and heartbeat") {
  TempDir t;
  const fs::path dir = t.path / "nccl-scaling.arrivals";
  ArrivalBoard r0(dir, 0, "node1"), r1(dir, 1, "node2");
  r0.prepare(true);
  r1.prepare(false);
  r0.write(7, 1000.5);
  r1.write(6, 990.25);
  const auto board = r0.read({0, 1, 2});
  REQUIRE(board.size() == 3);
  CHECK(board[0].readable);
  CHECK(board[0].progress == 7);
  CHECK(board[0].heartbeat_unix == Approx(1000.5));
  CHECK(board[0].host == "node1");
  CHECK(board[0].pid == ::getpid());
  CHECK(board[1].progress == 6);
  CHECK(board[1].host == "node2");
  CHECK_FALSE(board[2].readable);  // never started
  // Rewriting a shorter line leaves no tail of the old one.
  r1.write(6, 1.0);
  CHECK(r0.read({1})[0].heartbeat_unix == Approx(1.0));
}

TEST_CASE("a torn or foreign line is unreadable, not misread") {
  CHECK_FALSE(ArrivalBoard::parse_line(3, "12 1000.0 44 node").readable);  // no newline: torn
  CHECK_FALSE(ArrivalBoard::parse_line(3, "garbage\n").readable);
  CHECK_FALSE(ArrivalBoard::parse_line(3, "").readable);
  const auto e = ArrivalBoard::parse_line(3, ArrivalBoard::format_line(12, 1000.25, 44, "gpa-node1"));
  CHECK(e.readable);
  CHECK(e.rank == 3);
  CHECK(e.progress == 12);
  CHECK(e.pid == 44);
  CHECK(e.host == "gpa-node1");
}

TEST_CASE("the abort notice: empty until a rank gives up") {
  TempDir t;
  ArrivalBoard r0(t.path / "a", 0, "node1"), r5(t.path / "a", 5, "node2");
  r0.prepare(true);
  r5.prepare(false);
  CHECK_FALSE(r5.abort_reason());
  r5.raise_abort("rank 5 (node2): all_reduce 64 MiB did not finish\nwithin 120 s");
  REQUIRE(r0.abort_reason());
  CHECK(*r0.abort_reason() == "rank 5 (node2): all_reduce 64 MiB did not finish within 120 s");
  r0.prepare(true);  // a new run in the same directory starts without a notice
  CHECK_FALSE(r5.abort_reason());
  r0.remove();
  CHECK_FALSE(fs::exists(t.path / "a"));
}

TEST_CASE("laggards: behind, dead by heartbeat, or without a file") {
  std::vector<ArrivalEntry> board(4);
  for (int r = 0; r < 4; ++r) {
    board[r].rank = r;
    board[r].readable = true;
    board[r].progress = 20;
    board[r].heartbeat_unix = 1000;
    board[r].host = "node" + std::to_string(r / 2 + 1);
  }
  board[1].progress = 18;  // behind, heartbeat fresh: alive but stuck
  board[2].progress = 19;
  board[2].heartbeat_unix = 900;  // silent for 100 s: dead
  board[3].readable = false;
  const auto lag = find_laggards(board, {0, 1, 2, 3}, 20, 1001, 30);
  REQUIRE(lag.size() == 3);
  CHECK(lag[0].rank == 1);
  CHECK_FALSE(lag[0].dead);
  CHECK(lag[1].rank == 2);
  CHECK(lag[1].dead);
  CHECK(lag[1].silent_s == Approx(101));
  CHECK(lag[2].rank == 3);
  CHECK_FALSE(lag[2].readable);
  const std::string text = describe_laggards(lag, step_name);
  CHECK(text.find("1 (node1, alive, stuck at step 18)") != std::string::npos);
  CHECK(text.find("2 (node2, no heartbeat for 101 s: dead?, last at step 19)") != std::string::npos);
  CHECK(text.find("3 (no arrival file") != std::string::npos);
  // Only the expected ranks count.
  CHECK(find_laggards(board, {0}, 20, 1001, 30).empty());
  // The first rank that arrived records the failure.
  CHECK(first_arrived(board, {0, 1, 2, 3}, 20) == 0);
  CHECK(first_arrived(board, {1, 2, 3}, 20) == -1);
  board[1].progress = 25;
  CHECK(first_arrived(board, {1, 2, 3}, 20) == 1);
}

TEST_CASE("after a fault: a verdict per rank only once the wait has been long enough to tell") {
  Laggard live;
  live.rank = 1;
  live.host = "node1";
  live.readable = true;
  live.progress = 18;
  Laggard gone = live;
  gone.rank = 2;
  gone.dead = true;
  gone.silent_s = 40;
  // A timeout (the wait lasted past dead_after_s): each rank judged.
  CHECK(describe_fault_laggards({live}, 30, 11, step_name) == "ranks that did not arrive: 1 (node1, alive, stuck at step 18)");
  // An NCCL error 0.4 s in: the live ranks may not have posted yet, a dead one not gone silent.
  CHECK(describe_fault_laggards({live, gone}, 0.4, 11, step_name).starts_with(
      "ranks not yet seen at this point: 1, 2 (the failure came 0.4 s into the wait"));
  // Unless every one of them is already known dead.
  CHECK(describe_fault_laggards({gone}, 0.4, 11, step_name).starts_with("ranks that did not arrive: 2 (node1, no heartbeat"));
  CHECK(describe_fault_laggards({}, 0.4, 11, step_name).starts_with("every rank arrived"));
}
