#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "smoke/fs_bench.h"
#include "smoke/fs_token.h"

using namespace gpuaccept;
using namespace gpuaccept::smoke;
namespace fs = std::filesystem;

namespace {
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / ("gpa-smoke-" + name + "-" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};
}  // namespace

TEST_CASE("a token written and read through the same directory passes", "[smoke][fs]") {
  TempDir dir("same");
  const FsToken t{3, "gpa-node1", 0x1234abcd5678ef01ull};
  REQUIRE(write_token_file(dir.path, t).empty());
  const TokenCheck c = verify_token_file(token_path(dir.path, 3), t, "gpa-node2");
  CHECK(c.status == Status::Pass);
  CHECK_THAT(c.message, Catch::Contains("gpa-node2") && Catch::Contains("gpa-node1"));
}

TEST_CASE("two nodes with different directories: FAIL naming both nodes", "[smoke][fs]") {
  // Node 1 writes into its private directory; node 2 looks in its own, as it would
  // when the "shared" results directory is node-local (e.g. /tmp on each node).
  TempDir node1("node1"), node2("node2");
  const FsToken t{0, "gpa-node1", 42};
  REQUIRE(write_token_file(node1.path, t).empty());
  const TokenCheck c = verify_token_file(token_path(node2.path, 0), t, "gpa-node2");
  CHECK(c.status == Status::Fail);
  CHECK_THAT(c.message, Catch::StartsWith("gpa-node2 cannot see the file gpa-node1 (rank 0) wrote: ") &&
                            Catch::Contains(token_path(node2.path, 0).string()) &&
                            Catch::Contains("No such file or directory"));
}

TEST_CASE("a stale or torn token file fails", "[smoke][fs]") {
  TempDir dir("stale");
  const FsToken old{1, "gpa-node1", 1}, now{1, "gpa-node1", 2};
  REQUIRE(write_token_file(dir.path, old).empty());
  TokenCheck c = verify_token_file(token_path(dir.path, 1), now, "gpa-node2");
  CHECK(c.status == Status::Fail);
  CHECK_THAT(c.message, Catch::Contains("stale"));

  std::ofstream(token_path(dir.path, 1)) << "rank=1\nhost=gpa-no";  // cut short
  c = verify_token_file(token_path(dir.path, 1), now, "gpa-node2");
  CHECK(c.status == Status::Fail);
  CHECK_THAT(c.message, Catch::Contains("checksum mismatch"));
}

TEST_CASE("an unwritable directory is reported", "[smoke][fs]") {
  const std::string error = write_token_file("/nonexistent/gpa-smoke", {0, "h", 1});
  CHECK_THAT(error, Catch::Contains("/nonexistent/gpa-smoke/0.token"));
}

TEST_CASE("fs_peer_rank reads a file from the next node", "[smoke][fs]") {
  // Two nodes, two ranks each: 0,1 on node 0; 2,3 on node 1.
  const std::vector<int> nodes{0, 0, 1, 1};
  CHECK(fs_peer_rank(0, nodes) == 2);
  CHECK(fs_peer_rank(1, nodes) == 3);
  CHECK(fs_peer_rank(2, nodes) == 0);
  CHECK(fs_peer_rank(3, nodes) == 1);
  // Uneven: node 1 has one rank; local rank 1 of node 0 falls back to its first rank.
  CHECK(fs_peer_rank(1, {0, 0, 1}) == 2);
  CHECK(fs_peer_rank(2, {0, 0, 1}) == 0);
  CHECK(fs_peer_rank(0, {0, 0}) == -1);  // one node
}

TEST_CASE("metadata and streaming measurements run on a local directory", "[smoke][fs]") {
  TempDir dir("bench");
  const FsMetadata m = measure_metadata(dir.path / "meta", 20);
  CHECK(m.error.empty());
  CHECK(m.create_us > 0);
  CHECK_FALSE(fs::exists(dir.path / "meta"));
  const FsStream s = measure_stream(dir.path / "stream", (8u << 20) + 24);  // not a whole chunk
  CHECK(s.error.empty());
  CHECK(s.write_gbs > 0);
  CHECK(s.read_gbs > 0);
  CHECK_FALSE(fs::exists(dir.path / "stream"));
}
