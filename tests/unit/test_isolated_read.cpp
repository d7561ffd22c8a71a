// read_result_file_isolated: the same ResultFile as read_result_file for a good file,
// and an InputError naming the file for one whose reader fails, crashes or loops.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "common/error.h"
#include "results/isolated_read.h"
#include "fresh_dir.h"
#include "results/result_file.h"

using namespace gpuaccept;
using namespace std::chrono_literals;
namespace fs = std::filesystem;
using gpuaccept::testing::fresh_dir;

namespace {

ResultFile sample() {
  ResultFile f;
  f.attributes = {{"phase", "smoke"}, {"complete", "yes"}, {"config", "smoke:\n  seconds: 5\n"}};
  for (int r = 0; r < 3; ++r) {
    Record rec;
    rec.phase = "smoke";
    rec.rank = r;
    rec.node = "gpa-node1";
    rec.gpu_index = r;
    rec.test = "gemm";
    rec.metric = "tflops";
    rec.value = 700.5 + r;
    rec.unit = "TFLOP/s";
    rec.params = {{"dtype", "bf16"}};
    rec.status = r == 2 ? Status::Fail : Status::Pass;
    rec.message = "rank " + std::to_string(r);
    f.records.push_back(rec);
  }
  Record check;
  check.phase = "smoke";
  check.rank = kJobLevel;
  check.test = "slurm_controller";
  check.status = Status::Skip;
  f.records.push_back(check);
  f.documents["inventory"] = {R"({"rank":0})", "", R"({"rank":2})"};
  return f;
}

[[noreturn]] ResultFile crashing_reader(const fs::path&) {
  ::raise(SIGSEGV);
  std::abort();
}

[[noreturn]] ResultFile looping_reader(const fs::path&) {
  for (;;) ::pause();
}

ResultFile throwing_reader(const fs::path&) { throw std::runtime_error("[json.exception.parse_error.101] bad params"); }

bool no_children_left() { return ::waitpid(-1, nullptr, WNOHANG) == -1 && errno == ECHILD; }

// Sets an environment variable for one test, and puts the old value back.
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(std::string n, const char* value) : name(std::move(n)) {
    if (const char* v = std::getenv(name.c_str())) old = v;
    if (value) ::setenv(name.c_str(), value, 1);
    else ::unsetenv(name.c_str());
  }
  ~ScopedEnv() {
    if (old) ::setenv(name.c_str(), old->c_str(), 1);
    else ::unsetenv(name.c_str());
  }
};

}  // namespace

TEST_CASE("a good file reads the same in a child as in this process", "[isolated]") {
  const fs::path dir = fresh_dir("isolated-good");
  ResultFile in = sample();
  in.records[1].value = INFINITY;  // JSON has no infinity: it must still come back as one
  const fs::path path = write_result_file(dir / "smoke.h5", in);
  const ResultFile direct = read_result_file(path);
  const ResultFile isolated = read_result_file_isolated(path, 30s);
  CHECK(isolated.records == direct.records);
  CHECK(isolated.records == in.records);
  CHECK(isolated.attributes == direct.attributes);
  CHECK(isolated.documents == direct.documents);
  CHECK(no_children_left());
  fs::remove_all(dir);
}

TEST_CASE("strings that are not UTF-8 come back replaced, never as an exception", "[isolated]") {
  const fs::path dir = fresh_dir("isolated-utf8");
  ResultFile in = sample();
  in.records[0].message = "bit flip \xff\xfe here";
  in.attributes["hosts"] = "gpa-node\x81";
  const ResultFile out = read_result_file_isolated(write_result_file(dir / "smoke.h5", in), 30s);
  CHECK(out.records[0].message == "bit flip \xEF\xBF\xBD\xEF\xBF\xBD here");
  CHECK(out.attributes.at("hosts") == "gpa-node\xEF\xBF\xBD");
  fs::remove_all(dir);
}

TEST_CASE("the reader's own errors reach the caller with the file's name", "[isolated]") {
  const fs::path dir = fresh_dir("isolated-errors");
  const fs::path missing = dir / "ddp.h5";
  CHECK_THROWS_AS(read_result_file_isolated(missing, 30s), InputError);
  CHECK_THROWS_WITH(read_result_file_isolated(missing, 30s),
                    Catch::Contains(missing.string()) && Catch::Contains("does not exist"));
  std::ofstream(dir / "notes.h5") << "not hdf5\n";
  CHECK_THROWS_WITH(read_result_file_isolated(dir / "notes.h5", 30s), Catch::Contains("not an HDF5 file"));
  // An error that does not name the file gets the name put in front.
  const fs::path good = write_result_file(dir / "smoke.h5", sample());
  CHECK_THROWS_WITH(read_result_file_isolated(good, 30s, &throwing_reader),
                    Catch::StartsWith("results file " + good.string() + ": unreadable") &&
                        Catch::Contains("bad params"));
  CHECK(no_children_left());
  fs::remove_all(dir);
}

TEST_CASE("a reader killed by a signal is a damaged file, named", "[isolated]") {
  const fs::path dir = fresh_dir("isolated-crash");
  const fs::path path = write_result_file(dir / "smoke.h5", sample());
  CHECK_THROWS_AS(read_result_file_isolated(path, 30s, &crashing_reader), InputError);
  CHECK_THROWS_WITH(read_result_file_isolated(path, 30s, &crashing_reader),
                    Catch::Equals("damaged results file " + path.string() +
                                  ": the reader was killed by SIGSEGV (Segmentation fault) inside libhdf5"));
  CHECK(no_children_left());
  fs::remove_all(dir);
}

TEST_CASE("a reader that loops is killed at the limit, and the file named", "[isolated]") {
  const fs::path dir = fresh_dir("isolated-loop");
  const fs::path path = write_result_file(dir / "smoke.h5", sample());
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(read_result_file_isolated(path, 250ms, &looping_reader),
                    Catch::StartsWith("results file " + path.string() + ": the reader did not finish within 0.25 s") &&
                        Catch::Contains("GPUACCEPT_READ_TIMEOUT"));
  CHECK(std::chrono::steady_clock::now() - start < 5s);
  CHECK(no_children_left());
  fs::remove_all(dir);
}

TEST_CASE("the time limit comes from GPUACCEPT_READ_TIMEOUT, else 30 s", "[isolated]") {
  {
    ScopedEnv env("GPUACCEPT_READ_TIMEOUT", nullptr);
    CHECK(read_time_limit() == 30s);
  }
  {
    ScopedEnv env("GPUACCEPT_READ_TIMEOUT", "2.5");
    CHECK(read_time_limit() == 2500ms);
  }
  for (const char* bad : {"abc", "0", "-3", "5s", "nan", "1e9"}) {
    ScopedEnv env("GPUACCEPT_READ_TIMEOUT", bad);
    CHECK_THROWS_WITH(read_time_limit(), Catch::Contains("GPUACCEPT_READ_TIMEOUT='" + std::string(bad) + "'"));
  }
}
