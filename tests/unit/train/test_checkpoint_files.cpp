// Training checkpoints' files (CPU side): what a rank writes reads back bit for bit through
// the manifest, on the same world size and on another; a save that did not finish is passed
// over for the previous checkpoint; a truncated, damaged or foreign file, a malformed manifest
// and a checkpoint of another model are refused naming the file and the tensor or key; a full
// filesystem is a clear error that leaves nothing behind.
#include <catch2/catch.hpp>

#include <sys/resource.h>

#include <csignal>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <xxhash.h>

#include "common/error.h"
#include "../fresh_dir.h"
#include "train/checkpoint_files.h"
#include "train/checkpoint_manifest.h"
#include "train/checkpoint_save.h"
#include "train/safetensors_reader.h"
#include "train/safetensors_writer.h"
#include "train/sequential_io.h"
#include "world/world.h"

using namespace gpuaccept;
using namespace gpuaccept::train;
namespace fs = std::filesystem;

namespace {

// A training state of two fp32 tensors with distinct values everywhere.
struct State {
  std::vector<float> master, adam_m;
  explicit State(std::size_t n) : master(n), adam_m(n + 7) {
    for (std::size_t i = 0; i < master.size(); ++i) master[i] = 0.5f + static_cast<float>(i) * 1e-3f;
    for (std::size_t i = 0; i < adam_m.size(); ++i) adam_m[i] = -static_cast<float>(i) * 1e-6f;
  }
  CheckpointManifest header() const {
    CheckpointManifest h;
    h.phase = "ddp";
    h.state = {{"model", "tiny"}, {"seed", "1"}};
    h.tensors = {{"master", Dtype::f32, master.size()}, {"adam_m", Dtype::f32, adam_m.size()}};
    return h;
  }
  std::vector<HostSlice> slices(int world, int rank) const {
    const CheckpointManifest h = header();
    const SliceRange a = slice_of(master.size(), world, rank), b = slice_of(adam_m.size(), world, rank);
    return {{h.tensors[0], a, master.data() + a.first}, {h.tensors[1], b, adam_m.data() + b.first}};
  }
};

// Rank files of `world` ranks and their manifest, written as save_checkpoint would.
fs::path write_checkpoint(const fs::path& root, const State& s, int world, int step) {
  const fs::path dir = root / step_dir_name(step);
  fs::create_directories(dir);
  CheckpointManifest m = s.header();
  m.step = step;
  m.world_size = world;
  for (int r = 0; r < world; ++r) m.files.push_back(write_rank_file(dir, step, r, world, "node" + std::to_string(r), s.slices(world, r)));
  write_manifest(dir, m);
  return dir;
}

std::vector<float> restore(const FoundCheckpoint& f, const std::string& name, std::size_t n, int world) {
  std::vector<float> out(n, -1.0f);
  for (int r = 0; r < world; ++r) {
    const SliceRange want = slice_of(n, world, r);
    read_state_range(f, name, want, out.data() + want.first);
  }
  return out;
}

void flip_byte(const fs::path& p, std::uint64_t offset) {
  std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.read(&c, 1);
  c ^= 0x10;
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(&c, 1);
}

}  // namespace

TEST_CASE("slices of a state tensor cover it once, in rank order, on any world size") {
  for (const std::uint64_t total : {0ull, 1ull, 7ull, 1000ull, 1001ull})
    for (const int world : {1, 2, 3, 8}) {
      std::uint64_t next = 0;
      for (int r = 0; r < world; ++r) {
        const SliceRange s = slice_of(total, world, r);
        CHECK(s.first == next);
        next = s.first + s.count;
      }
      CHECK(next == total);
    }
}

TEST_CASE("a safetensors file written here reads back through the reader, data aligned and hashed") {
  const fs::path dir = testing::fresh_dir("st-writer");
  const std::vector<float> a{1.0f, -2.0f, 3.5f};
  const std::vector<std::uint16_t> b{0x3f80, 0xc000};
  const WrittenFile w = write_safetensors(dir / "x.safetensors",
                                          {{"a", Dtype::f32, {3}, a.data()}, {"b", Dtype::bf16, {1, 2}, b.data()}},
                                          {{"step", "5"}});
  const SafetensorsFile f(dir / "x.safetensors");
  CHECK(f.data_start() % kSafetensorsDataAlign == 0);
  CHECK(f.file_size() == w.bytes);
  CHECK(f.metadata().at("step") == "5");
  std::vector<float> a2(3);
  f.read_elements("a", 0, 3, a2.data());
  CHECK(a2 == a);
  CHECK(f.tensor("b").shape == std::vector<std::int64_t>{1, 2});
  REQUIRE(w.tensors.size() == 2);
  CHECK(w.tensors[0].xxh3 == XXH3_64bits(a.data(), 12));
  CHECK(w.tensors[1].xxh3 == XXH3_64bits(b.data(), 4));
  fs::remove_all(dir);
}

TEST_CASE("a tensor of many write chunks, hashed on its own thread ahead of the writes, reads back and matches its hash") {
  const fs::path dir = testing::fresh_dir("st-writer-large");
  std::vector<float> big((5u << 20) + 7);  // 20 MiB + 28 bytes: hashed ahead, a short last chunk
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i % 9973) * 0.5f;
  const std::vector<float> small{4.0f};
  const WrittenFile w = write_safetensors(
      dir / "big.safetensors",
      {{"small", Dtype::f32, {1}, small.data()}, {"big", Dtype::f32, {static_cast<std::int64_t>(big.size())}, big.data()}}, {});
  REQUIRE(w.tensors.size() == 2);
  CHECK(w.tensors[1].xxh3 == XXH3_64bits(big.data(), big.size() * 4));
  CHECK(w.fsync_s >= 0);
  CHECK(w.fsync_s <= w.write_s);
  const SafetensorsFile f(dir / "big.safetensors");
  std::vector<float> back(big.size());
  f.read_elements("big", 0, big.size(), back.data());
  CHECK(back == big);
  fs::remove_all(dir);
}

TEST_CASE("writeback started behind the writer, at any window, leaves the same file and hashes as none") {
  // The window only moves the disk's work earlier (sync_file_range without waiting): the bytes
  // on disk and the checksums must not depend on it, whether it falls inside a write chunk, on
  // a chunk's edge or never.
  const fs::path dir = testing::fresh_dir("st-writer-writeback");
  std::vector<float> big((3u << 20) + 5);  // 12 MiB + 20 bytes: hashed ahead, three write chunks
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i % 7919) * 0.25f;
  const std::vector<std::uint16_t> small{0x3f80, 0x4000, 0x4040};
  const auto write = [&](const fs::path& path, std::uint64_t window) {
    return write_safetensors(path,
                             {{"small", Dtype::bf16, {3}, small.data()},
                              {"big", Dtype::f32, {static_cast<std::int64_t>(big.size())}, big.data()}},
                             {{"step", "7"}}, window);
  };
  const WrittenFile none = write(dir / "none.safetensors", 0);
  const auto bytes_of = [](const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string expected = bytes_of(dir / "none.safetensors");
  REQUIRE(expected.size() == none.bytes);
  for (const std::uint64_t window : {std::uint64_t{1}, std::uint64_t{4096}, std::uint64_t{4} << 20, std::uint64_t{5} << 20,
                                     kWritebackWindow}) {
    CAPTURE(window);
    const fs::path path = dir / fmt::format("w{}.safetensors", window);
    const WrittenFile w = write(path, window);
    CHECK(w.bytes == none.bytes);
    REQUIRE(w.tensors.size() == 2);
    CHECK(w.tensors[0].xxh3 == none.tensors[0].xxh3);
    CHECK(w.tensors[1].xxh3 == XXH3_64bits(big.data(), big.size() * 4));
    CHECK(bytes_of(path) == expected);
  }
  fs::remove_all(dir);
}

TEST_CASE("a write that fails inside a large tensor stops its hasher and leaves no file") {
  // The file size limit (EFBIG past 8 MiB, SIGXFSZ ignored) fails the write mid-tensor, after
  // the hasher started: the error must come out, not a hang or a crash.
  const fs::path dir = testing::fresh_dir("st-writer-efbig");
  const std::vector<float> big(6u << 20, 1.0f);  // 24 MiB
  struct rlimit old {};
  REQUIRE(getrlimit(RLIMIT_FSIZE, &old) == 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old;
  small.rlim_cur = 8u << 20;
  REQUIRE(setrlimit(RLIMIT_FSIZE, &small) == 0);
  std::string what;
  try {
    write_safetensors(dir / "big.safetensors", {{"big", Dtype::f32, {static_cast<std::int64_t>(big.size())}, big.data()}}, {});
  } catch (const std::exception& e) {
    what = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  CHECK_THAT(what, Catch::Contains("big.safetensors") && Catch::Contains("File too large"));
  CHECK_FALSE(fs::exists(dir / "big.safetensors"));
  fs::remove_all(dir);
}

TEST_CASE("a checkpoint saved through World reads back bit for bit, and is the latest") {
  const fs::path root = testing::fresh_dir("ckpt-save");
  const State s(1000);
  auto world = make_single_world();
  bool staged = false;
  const CheckpointSave save = save_checkpoint(*world, root, s.header(), 12, s.slices(1, 0), [&] { staged = true; });
  REQUIRE(save.complete);
  CHECK(save.error.empty());
  CHECK(staged);
  CHECK(save.dir == root / "step-00000012");
  REQUIRE(save.ranks.size() == 1);
  CHECK(save.ranks[0].bytes == fs::file_size(save.dir / "rank-00000.safetensors"));
  CHECK(save.consistent_s >= save.mine.write_s);

  const FoundCheckpoint f = latest_checkpoint(root, "ddp");
  REQUIRE(f.found());
  CHECK(f.manifest.step == 12);
  CHECK(f.manifest.world_size == 1);
  require_compatible(f, s.header());
  CHECK(restore(f, "master", s.master.size(), 1) == s.master);
  CHECK(restore(f, "adam_m", s.adam_m.size(), 1) == s.adam_m);
  fs::remove_all(root);
}

TEST_CASE("a checkpoint of 3 ranks restores on 1, 2, 3 and 5 ranks") {
  const fs::path root = testing::fresh_dir("ckpt-reshard");
  const State s(1001);
  write_checkpoint(root, s, 3, 4);
  const FoundCheckpoint f = latest_checkpoint(root);
  REQUIRE(f.found());
  for (const int world : {1, 2, 3, 5}) {
    CHECK(restore(f, "master", s.master.size(), world) == s.master);
    CHECK(restore(f, "adam_m", s.adam_m.size(), world) == s.adam_m);
  }
  fs::remove_all(root);
}

TEST_CASE("a save that did not finish (no manifest) is passed over for the previous checkpoint") {
  const fs::path root = testing::fresh_dir("ckpt-unfinished");
  const State s(100);
  write_checkpoint(root, s, 2, 4);
  const fs::path later = write_checkpoint(root, s, 2, 8);
  fs::remove(later / kManifestName);                 // rank 1 never reported: no manifest
  fs::remove(later / "rank-00001.safetensors");
  const FoundCheckpoint f = latest_checkpoint(root, "ddp");
  REQUIRE(f.found());
  CHECK(f.manifest.step == 4);
  REQUIRE(f.passed_over.size() == 1);
  CHECK_THAT(f.passed_over[0], Catch::Contains("step-00000008") && Catch::Contains("no manifest") &&
                                   Catch::Contains("1 of 2 ranks' files there, missing: 1"));
  CHECK(restore(f, "master", s.master.size(), 2) == s.master);
  // Another phase's checkpoints are not this one's.
  CHECK_FALSE(latest_checkpoint(root, "fsdp-lora").found());
  fs::remove_all(root);
}

TEST_CASE("a truncated, damaged or foreign rank file is refused naming the file and the tensor") {
  const fs::path root = testing::fresh_dir("ckpt-damaged");
  const State s(1000);
  const fs::path dir = write_checkpoint(root, s, 2, 3);
  const fs::path file1 = dir / "rank-00001.safetensors";
  FoundCheckpoint f = latest_checkpoint(root);
  REQUIRE(f.found());
  const SliceRange mine = slice_of(s.master.size(), 2, 1);
  std::vector<float> out(mine.count);

  SECTION("truncated") {
    fs::resize_file(file1, fs::file_size(file1) - 100);
    CHECK_THROWS_WITH(read_state_range(f, "master", mine, out.data()),
                      Catch::Contains("rank-00001.safetensors") && Catch::Contains("truncated"));
  }
  SECTION("a flipped bit in the data") {
    const SafetensorsFile st(file1);
    flip_byte(file1, st.data_start() + st.tensor("adam_m").begin + 40);
    const SliceRange m = slice_of(s.adam_m.size(), 2, 1);
    std::vector<float> o(m.count);
    CHECK_THROWS_WITH(read_state_range(f, "adam_m", m, o.data()),
                      Catch::Contains("rank-00001.safetensors") && Catch::Contains("'adam_m'") &&
                          Catch::Contains("checksum"));
    // The other tensor of the same file is intact and reads.
    CHECK_NOTHROW(read_state_range(f, "master", mine, out.data()));
  }
  SECTION("another rank's file in its place") {
    fs::copy_file(dir / "rank-00000.safetensors", file1, fs::copy_options::overwrite_existing);
    f.manifest.files[1].bytes = fs::file_size(file1);  // same size: only the metadata tells
    CHECK_THROWS_WITH(read_state_range(f, "master", mine, out.data()),
                      Catch::Contains("rank-00001.safetensors") && Catch::Contains("not rank 1's file"));
  }
  SECTION("a file that is not safetensors at all") {
    std::ofstream(file1, std::ios::trunc) << "hello";
    f.manifest.files[1].bytes = 5;
    CHECK_THROWS_AS(read_state_range(f, "master", mine, out.data()), InputError);
  }
  SECTION("missing") {
    fs::remove(file1);
    CHECK_THROWS_WITH(read_state_range(f, "master", mine, out.data()), Catch::Contains("rank-00001.safetensors"));
  }
  fs::remove_all(root);
}

TEST_CASE("a malformed manifest is refused naming the key") {
  const fs::path root = testing::fresh_dir("ckpt-manifest");
  const State s(10);
  const fs::path dir = write_checkpoint(root, s, 2, 1);
  const std::string good = manifest_json(read_manifest(dir));
  const auto refused = [&](const std::string& from, const std::string& to, const std::string& says) {
    std::string text = good;
    const auto at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
    CHECK_THROWS_WITH(parse_manifest(text, "m.json"), Catch::Contains("m.json") && Catch::Contains(says));
  };
  refused("\"gpuaccept-checkpoint\"", "\"other\"", "format");
  refused("\"version\":1", "\"version\":2", "version");
  refused("\"rank-00001.safetensors\"", "\"../rank-00001.safetensors\"", "not a plain file name");
  refused("\"world_size\":2", "\"world_size\":3", "files");
  refused("\"count\":5", "\"count\":4", "in no file");
  CHECK_THROWS_WITH(parse_manifest("{", "m.json"), Catch::Contains("not JSON"));
  CHECK_THROWS_AS(read_manifest(root / "nowhere"), InputError);
  fs::remove_all(root);
}

TEST_CASE("a checkpoint of another model or phase is refused, saying what differs") {
  const fs::path root = testing::fresh_dir("ckpt-compatible");
  const State s(10);
  write_checkpoint(root, s, 1, 1);
  const FoundCheckpoint f = latest_checkpoint(root);
  CheckpointManifest other = s.header();
  other.state["model"] = "gpt2_124m";
  CHECK_THROWS_WITH(require_compatible(f, other), Catch::Contains("state.model") && Catch::Contains("gpt2_124m"));
  other = s.header();
  other.tensors[0].elements = 11;
  CHECK_THROWS_WITH(require_compatible(f, other), Catch::Contains("'master'") && Catch::Contains("11"));
  other = s.header();
  other.phase = "fsdp-lora";
  CHECK_THROWS_WITH(require_compatible(f, other), Catch::Contains("phase 'ddp'"));
  fs::remove_all(root);
}

TEST_CASE("a full filesystem ends a write with the system's words and no partial file") {
  REQUIRE(fs::exists("/dev/full"));
  const std::vector<float> a(1 << 20, 1.0f);
  CHECK_THROWS_WITH(write_safetensors("/dev/full", {{"a", Dtype::f32, {1 << 20}, a.data()}}, {}),
                    Catch::Contains("/dev/full") && Catch::Contains("No space left on device"));
  CHECK(fs::exists("/dev/full"));  // a device is never removed as a partial file
  CHECK_THROWS_WITH(sequential_write_read("/dev/full", 1 << 20), Catch::Contains("No space left on device"));
  CHECK(fs::exists("/dev/full"));
}

TEST_CASE("the dd-style yardstick writes, reads back what it wrote and removes its file") {
  const fs::path dir = testing::fresh_dir("seq-io");
  const SequentialIo io = sequential_write_read(dir / "probe", (40ull << 20) + 123);
  CHECK(io.bytes == (40ull << 20) + 123);
  CHECK(io.write_s > 0);
  CHECK(io.read_s > 0);
  CHECK_FALSE(fs::exists(dir / "probe"));
  fs::remove_all(dir);
}
