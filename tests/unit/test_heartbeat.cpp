// Heartbeats (src/results/heartbeat.h): a rank's file touched while it runs; silent_ranks()
// naming the ranks whose heartbeat stopped well before the others'; the age of the newest.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "fresh_dir.h"
#include "results/heartbeat.h"

using namespace gpuaccept;
namespace fs = std::filesystem;

namespace {

// Sets a file's mtime to `seconds_ago` before now (creating it).
void touch_ago(const fs::path& p, double seconds_ago) {
  std::ofstream(p).put('\n');
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const double t = now - seconds_ago;
  timespec times[2];
  times[0].tv_sec = times[1].tv_sec = static_cast<time_t>(t);
  times[0].tv_nsec = times[1].tv_nsec = static_cast<long>((t - static_cast<double>(static_cast<time_t>(t))) * 1e9);
  REQUIRE(::utimensat(AT_FDCWD, p.c_str(), times, 0) == 0);
}

Record on_node(int rank, const std::string& node) {
  Record r;
  r.rank = rank;
  r.node = node;
  r.test = "t";
  return r;
}

}  // namespace

TEST_CASE("heartbeat: the thread creates and touches its file until stopped", "[heartbeat]") {
  const fs::path dir = testing::fresh_dir("heartbeat-thread") / "smoke.parts";
  const fs::path file = dir / "rank-00003.alive";
  {
    Heartbeat h(file, 0.05);  // makes the parts directory too
    for (int i = 0; i < 100 && !fs::exists(file); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    REQUIRE(fs::exists(file));
    const auto first = fs::last_write_time(file);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    CHECK(fs::last_write_time(file) > first);
    h.stop();
    const auto stopped = fs::last_write_time(file);
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    CHECK(fs::last_write_time(file) == stopped);  // stop() joined the thread: no more beats
  }
  CHECK(newest_heartbeat_age_s(dir) >= 0);
  CHECK(newest_heartbeat_age_s(dir) < 5);
  fs::remove_all(dir.parent_path());
}

TEST_CASE("heartbeat: a period of 0 does nothing", "[heartbeat]") {
  const fs::path dir = testing::fresh_dir("heartbeat-off");
  { Heartbeat h(dir / "p" / "rank-00000.alive", 0); }
  CHECK_FALSE(fs::exists(dir / "p"));
  CHECK(newest_heartbeat_age_s(dir / "p") == -1);  // no directory: no heartbeat
  fs::remove_all(dir);
}

TEST_CASE("heartbeat: silent_ranks names the rank that stopped beating, with its node", "[heartbeat]") {
  const fs::path dir = testing::fresh_dir("heartbeat-silent");
  touch_ago(dir / "rank-00000.alive", 0.5);
  touch_ago(dir / "rank-00001.alive", 1.0);
  touch_ago(dir / "rank-00002.alive", 40.0);   // stopped 39.5 s before rank 0's: more than 3 periods of 10 s
  touch_ago(dir / "rank-00003.alive", 20.0);   // 19.5 s: within 3 periods
  touch_ago(dir / "rank-00000.h5", 100.0);     // a checkpoint, not a heartbeat
  const std::vector<Record> records{on_node(0, "n1"), on_node(2, "n2"), on_node(3, "n2")};

  const auto silent = silent_ranks(dir, records, 10.0);
  REQUIRE(silent.size() == 1);
  CHECK(silent[0].rank == 2);
  CHECK(silent[0].node == "n2");
  CHECK(silent[0].behind_s == Approx(39.5).margin(0.5));
  CHECK(describe(silent[0]).starts_with("rank 2 (n2): its heartbeat stopped "));
  CHECK(describe(silent[0]).find(" s before the last rank's (hung or stopped, or its node lost)") != std::string::npos);
  // The rank's own ERROR, so the report blames its node (and not the survivors').
  const Record r = silent_rank_record(silent[0], "smoke");
  CHECK(r.rank == 2);
  CHECK(r.node == "n2");
  CHECK(r.status == Status::Error);
  CHECK(r.test == "result_gather");
  CHECK(r.phase == "smoke");
  CHECK_FALSE(caused_by_peer(r));

  // A shorter period makes rank 3 silent too; the floor of 3 s keeps rank 1 (0.5 s) out.
  CHECK(silent_ranks(dir, records, 0.1).size() == 2);
  CHECK(silent_ranks(dir, records, 0).empty());  // heartbeats off: nothing can be told
  CHECK(newest_heartbeat_age_s(dir) == Approx(0.5).margin(0.5));
  fs::remove_all(dir);
}

TEST_CASE("heartbeat: a rank that ended is not silent, however old its heartbeat", "[heartbeat]") {
  const fs::path dir = testing::fresh_dir("heartbeat-ended");
  const fs::path mine = dir / "rank-00001.alive";
  {
    Heartbeat h(mine, 0.05);
    for (int i = 0; i < 100 && !fs::exists(mine); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    REQUIRE(fs::exists(mine));
  }  // the destructor stops it and marks it ended
  touch_ago(dir / "rank-00000.alive", 0);
  // Age rank 1's file without touching its contents.
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  timespec old[2];
  old[0].tv_sec = old[1].tv_sec = static_cast<time_t>(now - 100);
  old[0].tv_nsec = old[1].tv_nsec = 0;
  REQUIRE(::utimensat(AT_FDCWD, mine.c_str(), old, 0) == 0);
  CHECK(silent_ranks(dir, {}, 1.0).empty());
  // stop() never brings a removed file back (rank 0 removes the parts once it wrote the phase file).
  const fs::path gone = dir / "sub" / "rank-00002.alive";
  Heartbeat h(gone, 0.05);
  for (int i = 0; i < 100 && !fs::exists(gone); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  fs::remove_all(dir / "sub");
  h.stop();
  h.stop();  // idempotent
  CHECK_FALSE(fs::exists(dir / "sub"));
  fs::remove_all(dir);
}

TEST_CASE("heartbeat: one rank alone is never silent (nothing to compare with)", "[heartbeat]") {
  const fs::path dir = testing::fresh_dir("heartbeat-one");
  touch_ago(dir / "rank-00000.alive", 500);
  CHECK(silent_ranks(dir, {}, 10.0).empty());
  CHECK(newest_heartbeat_age_s(dir) == Approx(500).margin(2));
  fs::remove_all(dir);
}
