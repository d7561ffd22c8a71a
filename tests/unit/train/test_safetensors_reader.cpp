// The safetensors reader: files written here read back exactly (names, dtypes, shapes, slices
// at any offset), index + shards resolve to the right file, bf16 conversion rounds as torch
// does, and every malformed file or checkpoint is refused with an InputError naming the file
// and the tensor, never a crash.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "train/safetensors_reader.h"

using namespace gpuaccept;
using namespace gpuaccept::train;
namespace fs = std::filesystem;

namespace {

// A directory of its own per test, removed at the end.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / ("gpuaccept-st-" + std::to_string(::getpid()) + "-" + name)) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  fs::path operator/(const std::string& name) const { return path / name; }
};

struct TestTensor {
  std::string name;
  std::string dtype;  // safetensors' spelling: "BF16"
  std::vector<std::int64_t> shape;
  std::vector<unsigned char> data;
};

template <typename T>
std::vector<unsigned char> bytes_of(const std::vector<T>& v) {
  std::vector<unsigned char> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// The 8-byte length, the header text and the data, as given: the bad cases need every part wrong.
void write_raw(const fs::path& path, std::uint64_t header_length, const std::string& header,
               const std::vector<unsigned char>& data = {}) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  unsigned char len[8];
  std::memcpy(len, &header_length, 8);
  out.write(reinterpret_cast<const char*>(len), 8);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}
void write_raw(const fs::path& path, const std::string& header, const std::vector<unsigned char>& data = {}) {
  write_raw(path, header.size(), header, data);
}

// A valid file as Hugging Face's writer lays it out: tensors back to back in the order given,
// the header padded with spaces to a multiple of 8.
void write_safetensors(const fs::path& path, const std::vector<TestTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {}) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<unsigned char> data;
  for (const auto& t : tensors) {
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {data.size(), data.size() + t.data.size()}}};
    data.insert(data.end(), t.data.begin(), t.data.end());
  }
  std::string text = header.dump();
  text.resize((text.size() + 7) / 8 * 8, ' ');
  write_raw(path, text, data);
}

// Open descriptors of this process: a refused file must not leak its descriptor.
std::size_t open_fds() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

// The error text of opening `path`, or "" when it opened.
std::string open_error(const fs::path& path) {
  try {
    SafetensorsFile f(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a safetensors file reads back its tensors with their dtypes and shapes and any slice") {
  TempDir dir("roundtrip");
  std::vector<std::uint16_t> a(15);  // BF16 [3, 5]
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<std::uint16_t>(0x3f80 + 7 * i);
  std::vector<float> b{0.5f, -1.25f, 3.0f, 1e-20f, 7.0f, -0.0f, 65504.0f};  // F32 [7]
  std::vector<std::int32_t> c(24);                                          // I32 [2, 3, 4]
  for (std::size_t i = 0; i < c.size(); ++i) c[i] = static_cast<std::int32_t>(i * i) - 100;
  std::vector<double> scalar{2.718281828};  // F64 []
  const auto path = dir / "model.safetensors";
  write_safetensors(path,
                    {{"z.a", "BF16", {3, 5}, bytes_of(a)},
                     {"m.b", "F32", {7}, bytes_of(b)},
                     {"c", "I32", {2, 3, 4}, bytes_of(c)},
                     {"empty", "F16", {0, 4}, {}},
                     {"scalar", "F64", {}, bytes_of(scalar)}},
                    {{"format", "pt"}});

  const SafetensorsFile f(path);
  REQUIRE(f.is_open());
  CHECK(f.path() == path);
  CHECK(f.metadata() == std::map<std::string, std::string>{{"format", "pt"}});
  CHECK(f.file_size() == fs::file_size(path));
  CHECK(f.data_start() % 8 == 0);
  CHECK(f.data_size() == 30 + 28 + 96 + 8);
  REQUIRE(f.tensors().size() == 5);
  std::vector<std::string> names;
  for (const auto& t : f.tensors()) names.push_back(t.name);
  CHECK(names == std::vector<std::string>{"c", "empty", "m.b", "scalar", "z.a"});

  const TensorInfo& ta = f.tensor("z.a");
  CHECK(ta.dtype == Dtype::bf16);
  CHECK(ta.shape == std::vector<std::int64_t>{3, 5});
  CHECK(ta.numel() == 15);
  CHECK(ta.bytes() == 30);
  CHECK(f.tensor("c").shape == std::vector<std::int64_t>{2, 3, 4});
  CHECK(f.tensor("c").dtype == Dtype::i32);
  CHECK(f.tensor("empty").numel() == 0);
  CHECK(f.tensor("scalar").numel() == 1);
  CHECK(f.tensor("scalar").shape.empty());
  CHECK(f.find("nope") == nullptr);
  CHECK_THROWS_WITH(f.tensor("nope"), Catch::Contains(path.string()) && Catch::Contains("no tensor 'nope'"));

  // Slices at odd offsets and counts come back element-exact.
  std::vector<std::uint16_t> a_part(7);
  f.read_elements("z.a", 3, 7, a_part.data());
  CHECK(a_part == std::vector<std::uint16_t>(a.begin() + 3, a.begin() + 10));
  std::vector<float> b_part(5);
  f.read_elements("m.b", 1, 5, b_part.data());
  CHECK(b_part == std::vector<float>(b.begin() + 1, b.begin() + 6));
  std::vector<std::int32_t> c_all(24), c_last(1);
  f.read_elements("c", 0, 24, c_all.data());
  CHECK(c_all == c);
  f.read_elements("c", 23, 1, c_last.data());
  CHECK(c_last[0] == c[23]);
  double s = 0;
  f.read_elements("scalar", 0, 1, &s);
  CHECK(s == scalar[0]);
  f.read_elements("c", 24, 0, nullptr);  // an empty slice at the end is allowed and reads nothing
  f.read_elements("empty", 0, 0, nullptr);

  CHECK_THROWS_AS(f.read_elements("c", 20, 5, c_all.data()), std::out_of_range);
  CHECK_THROWS_AS(f.read_elements("c", 25, 0, c_all.data()), std::out_of_range);
  CHECK_THROWS_AS(f.read_elements("c", 1, std::numeric_limits<std::uint64_t>::max(), c_all.data()), std::out_of_range);
  CHECK_THROWS_AS(f.read_elements("nope", 0, 1, c_all.data()), InputError);
}

TEST_CASE("a slice deep inside a multi-GiB tensor is read from its own bytes") {
  // A sparse 2 GiB tensor: reading 3 elements at its end must seek there (64-bit offsets past
  // 2^31), not read the file through.
  TempDir dir("big");
  const auto path = dir / "big.safetensors";
  const std::uint64_t rows = 1 << 15, cols = 1 << 15, bytes = rows * cols * 2;
  const std::string header = nlohmann::json{{"big", {{"dtype", "BF16"}, {"shape", {rows, cols}}, {"data_offsets", {0, bytes}}}}}.dump();
  write_raw(path, header);
  fs::resize_file(path, 8 + header.size() + bytes);
  const std::uint16_t tail[3] = {0x1234, 0xbeef, 0x4000};
  {
    std::fstream io(path, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(static_cast<std::streamoff>(8 + header.size() + bytes - sizeof tail));
    io.write(reinterpret_cast<const char*>(tail), sizeof tail);
  }
  const SafetensorsFile f(path);
  std::uint16_t got[3] = {};
  f.read_elements("big", rows * cols - 3, 3, got);
  CHECK(got[0] == 0x1234);
  CHECK(got[1] == 0xbeef);
  CHECK(got[2] == 0x4000);
  std::uint16_t as_bf16[3] = {};
  f.read_bf16("big", rows * cols - 3, 3, as_bf16);
  CHECK(std::memcmp(as_bf16, tail, sizeof tail) == 0);
}

TEST_CASE("F32 and F16 become bf16 rounded to nearest even, as torch rounds") {
  CHECK(bf16_from_f32(1.0f) == 0x3f80);
  CHECK(bf16_from_f32(-2.0f) == 0xc000);
  CHECK(bf16_from_f32(-0.0f) == 0x8000);
  // bf16 keeps 7 fraction bits: at 1.0 its ulp is 2^-7, half an ulp 2^-8.
  CHECK(bf16_from_f32(1.0f + 0x1p-8f) == 0x3f80);             // tie: down to the even 0x3f80
  CHECK(bf16_from_f32(1.0f + 3 * 0x1p-8f) == 0x3f82);         // tie: up to the even 0x3f82
  CHECK(bf16_from_f32(1.0f + 0x1p-8f + 0x1p-20f) == 0x3f81);  // above the tie: up
  CHECK(bf16_from_f32(1.0f + 0x1p-8f - 0x1p-20f) == 0x3f80);  // below the tie: down
  CHECK(bf16_from_f32(std::numeric_limits<float>::max()) == 0x7f80);  // rounds to +inf
  CHECK(bf16_from_f32(std::numeric_limits<float>::infinity()) == 0x7f80);
  CHECK(bf16_from_f32(-std::numeric_limits<float>::infinity()) == 0xff80);
  CHECK(bf16_from_f32(std::numeric_limits<float>::denorm_min()) == 0x0000);
  // A NaN whose payload would carry into the exponent stays a NaN, sign kept.
  const float nan_low = std::bit_cast<float>(0x7f80ffffu), neg_nan = std::bit_cast<float>(0xffffffffu);
  CHECK(std::isnan(f32_from_bf16(bf16_from_f32(nan_low))));
  CHECK(std::isnan(f32_from_bf16(bf16_from_f32(neg_nan))));
  CHECK((bf16_from_f32(neg_nan) & 0x8000) != 0);

  CHECK(f32_from_f16(0x3c00) == 1.0f);
  CHECK(f32_from_f16(0xc000) == -2.0f);
  CHECK(f32_from_f16(0x0001) == 0x1p-24f);  // the smallest half subnormal
  CHECK(f32_from_f16(0x83ff) == -1023 * 0x1p-24f);
  CHECK(f32_from_f16(0x7bff) == 65504.0f);
  CHECK(std::isinf(f32_from_f16(0x7c00)));
  CHECK(f32_from_f16(0xfc00) < 0);
  CHECK(std::isnan(f32_from_f16(0x7e00)));
  CHECK(std::signbit(f32_from_f16(0x8000)));
  // Half's 10 fraction bits rounded to 7: 65504 = (2 - 2^-10) x 2^15 rounds up to 2^16.
  CHECK(bf16_from_f32(f32_from_f16(0x7bff)) == 0x4780);
  // Every half converts through float exactly: back and forth loses nothing.
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const std::uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    if (exp == 0x1f) continue;  // infinities and NaNs, checked above
    const double mag = exp == 0 ? std::ldexp(mant, -24) : std::ldexp(1024 + mant, static_cast<int>(exp) - 25);
    const double expect = (h & 0x8000) ? -mag : mag;
    if (static_cast<double>(f32_from_f16(static_cast<std::uint16_t>(h))) != expect)
      FAIL("half 0x" << std::hex << h << " converts to " << f32_from_f16(static_cast<std::uint16_t>(h)));
  }

  // Through a file: read_bf16 of an F32 and an F16 slice equals the element-wise conversion.
  TempDir dir("convert");
  std::vector<float> f32(1000);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (auto& x : f32) x = normal(rng);
  std::vector<std::uint16_t> f16(999);
  for (std::size_t i = 0; i < f16.size(); ++i) f16[i] = static_cast<std::uint16_t>(i * 61 % 0x7c00);
  const auto path = dir / "mixed.safetensors";
  write_safetensors(path, {{"w32", "F32", {10, 100}, bytes_of(f32)},
                           {"w16", "F16", {999}, bytes_of(f16)},
                           {"i", "I32", {1}, std::vector<unsigned char>(4)}});
  const SafetensorsFile f(path);
  std::vector<std::uint16_t> out(333);
  f.read_bf16("w32", 501, 333, out.data());
  for (std::size_t i = 0; i < out.size(); ++i) CHECK(out[i] == bf16_from_f32(f32[501 + i]));
  f.read_bf16("w16", 17, 333, out.data());
  for (std::size_t i = 0; i < out.size(); ++i) CHECK(out[i] == bf16_from_f32(f32_from_f16(f16[17 + i])));
  CHECK_THROWS_WITH(f.read_bf16("i", 0, 1, out.data()), Catch::Contains(path.string()) && Catch::Contains("tensor 'i'") &&
                                                            Catch::Contains("I32 cannot be read as bf16"));
  CHECK_THROWS_AS(f.read_bf16("w32", 999, 2, out.data()), std::out_of_range);
  CHECK_THROWS_AS(convert_to_bf16(Dtype::f64, f32.data(), 1, out.data()), std::invalid_argument);
}

TEST_CASE("the dtype table has safetensors' names and sizes") {
  CHECK(dtype_from_name("BF16") == Dtype::bf16);
  CHECK(dtype_from_name("F8_E4M3") == Dtype::f8_e4m3);
  CHECK(dtype_from_name("bf16") == std::nullopt);
  CHECK(dtype_from_name("") == std::nullopt);
  CHECK(std::string(dtype_name(Dtype::f32)) == "F32");
  CHECK(std::string(dtype_name(Dtype::boolean)) == "BOOL");
  CHECK(dtype_size(Dtype::bf16) == 2);
  CHECK(dtype_size(Dtype::u64) == 8);
  CHECK(dtype_size(Dtype::f8_e5m2) == 1);
  CHECK(format_shape({3584, 512}) == "[3584, 512]");
  CHECK(format_shape({}) == "[]");
}

TEST_CASE("a moved SafetensorsFile keeps its descriptor and the moved-from one holds nothing") {
  TempDir dir("move");
  const auto p1 = dir / "one.safetensors", p2 = dir / "two.safetensors";
  write_safetensors(p1, {{"x", "F32", {2}, bytes_of(std::vector<float>{1, 2})}});
  write_safetensors(p2, {{"y", "F32", {1}, bytes_of(std::vector<float>{3})}});
  const std::size_t fds = open_fds();
  {
    SafetensorsFile a(p1);
    SafetensorsFile b(std::move(a));
    CHECK_FALSE(a.is_open());
    CHECK(a.tensors().empty());
    CHECK(a.path().empty());
    CHECK(a.find("x") == nullptr);
    CHECK(b.is_open());
    float x[2] = {};
    b.read_elements("x", 0, 2, x);
    CHECK(x[1] == 2.0f);
    CHECK_THROWS_AS(a.read_elements("x", 0, 1, x), std::logic_error);

    SafetensorsFile c(p2);
    CHECK(open_fds() == fds + 2);
    c = std::move(b);  // c's own file is closed, b's taken over
    CHECK(open_fds() == fds + 1);
    CHECK_FALSE(b.is_open());
    CHECK(c.path() == p1);
    c.read_elements("x", 0, 2, x);
    CHECK(x[0] == 1.0f);
    std::vector<SafetensorsFile> many;
    for (int i = 0; i < 20; ++i) many.emplace_back(i % 2 ? p1 : p2);  // vector growth moves them
    CHECK(open_fds() == fds + 21);
    float y = 0;
    many[4].read_elements("y", 0, 1, &y);
    CHECK(y == 3.0f);
  }
  CHECK(open_fds() == fds);
}

TEST_CASE("a checkpoint of an index and two shards maps every tensor to its shard") {
  TempDir dir("sharded");
  std::vector<std::uint16_t> q(12), k(6), v(6);
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = static_cast<std::uint16_t>(i + 1);
  for (std::size_t i = 0; i < k.size(); ++i) k[i] = static_cast<std::uint16_t>(100 + i);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::uint16_t>(200 + i);
  write_safetensors(dir / "model-00001-of-00002.safetensors",
                    {{"layers.0.q.weight", "BF16", {4, 3}, bytes_of(q)}, {"layers.0.k.weight", "BF16", {2, 3}, bytes_of(k)}});
  write_safetensors(dir / "model-00002-of-00002.safetensors", {{"layers.0.v.weight", "BF16", {2, 3}, bytes_of(v)},
                                                               {"not.in.the.index", "BF16", {1}, bytes_of(std::vector<std::uint16_t>{1})}});
  std::ofstream(dir / "model.safetensors.index.json") << R"({"metadata": {"total_size": 48}, "weight_map": {
      "layers.0.q.weight": "model-00001-of-00002.safetensors",
      "layers.0.k.weight": "model-00001-of-00002.safetensors",
      "layers.0.v.weight": "model-00002-of-00002.safetensors"}})";

  const SafetensorsCheckpoint ckpt(dir.path);
  CHECK(ckpt.sharded());
  CHECK(ckpt.files().size() == 2);
  CHECK(ckpt.tensor_names() == std::vector<std::string>{"layers.0.k.weight", "layers.0.q.weight", "layers.0.v.weight"});
  CHECK(ckpt.file_of("layers.0.v.weight").path().filename() == "model-00002-of-00002.safetensors");
  CHECK(ckpt.file_of("layers.0.k.weight").path().filename() == "model-00001-of-00002.safetensors");
  CHECK(ckpt.find("not.in.the.index") == nullptr);  // the index, not the shards, says what exists
  CHECK(ckpt.find("layers.0.q.weight")->shape == std::vector<std::int64_t>{4, 3});

  const TensorInfo& t = ckpt.require("layers.0.q.weight", {4, 3}, Dtype::bf16);
  CHECK(t.numel() == 12);
  std::vector<std::uint16_t> got(5);
  ckpt.read_elements("layers.0.q.weight", 7, 5, got.data());
  CHECK(got == std::vector<std::uint16_t>(q.begin() + 7, q.end()));
  ckpt.read_bf16("layers.0.v.weight", 1, 4, got.data());
  CHECK(std::vector<std::uint16_t>(got.begin(), got.begin() + 4) == std::vector<std::uint16_t>(v.begin() + 1, v.begin() + 5));
  const SafetensorsCheckpoint by_index(dir / "model.safetensors.index.json");
  CHECK(by_index.sharded());
  CHECK(by_index.tensor_names().size() == 3);
  CHECK(by_index.file_of("layers.0.v.weight").path() == ckpt.file_of("layers.0.v.weight").path());
  CHECK_THROWS_WITH(ckpt.require("layers.0.o.weight", {3, 3}, Dtype::bf16),
                    Catch::Contains("model.safetensors.index.json") && Catch::Contains("no tensor 'layers.0.o.weight'"));
}

TEST_CASE("a checkpoint of one model.safetensors opens by directory or by file") {
  TempDir dir("single");
  write_safetensors(dir / "model.safetensors", {{"w", "F32", {2, 2}, bytes_of(std::vector<float>{1, 2, 3, 4})}});
  for (const auto& where : {dir.path, dir / "model.safetensors"}) {
    const SafetensorsCheckpoint ckpt(where);
    CHECK_FALSE(ckpt.sharded());
    CHECK(ckpt.tensor_names() == std::vector<std::string>{"w"});
    std::uint16_t w[4];
    ckpt.read_bf16("w", 0, 4, w);
    CHECK(w[3] == 0x4080);  // 4.0
    CHECK(ckpt.require_bf16_source("w", {2, 2}).dtype == Dtype::f32);
  }
}

TEST_CASE("require names the file and the tensor and says what is wrong") {
  TempDir dir("require");
  // Shaped like Qwen2-7B's k_proj where a q_proj is expected; sparse, so no data is written.
  const auto path = dir / "model.safetensors";
  const std::string name = "model.layers.0.self_attn.q_proj.weight";
  const std::string header =
      nlohmann::json{{name, {{"dtype", "BF16"}, {"shape", {3584, 512}}, {"data_offsets", {0, 3584 * 512 * 2}}}},
                     {"ids", {{"dtype", "I64"}, {"shape", {2}}, {"data_offsets", {3584 * 512 * 2, 3584 * 512 * 2 + 16}}}},
                     {"norm", {{"dtype", "F32"}, {"shape", {3584}}, {"data_offsets", {3584 * 512 * 2 + 16, 3584 * 512 * 2 + 16 + 4 * 3584}}}}}
          .dump();
  write_raw(path, header);
  fs::resize_file(path, 8 + header.size() + 3584 * 512 * 2 + 16 + 4 * 3584);
  const SafetensorsCheckpoint ckpt(dir.path);

  CHECK(ckpt.require(name, {3584, 512}, Dtype::bf16).bytes() == 3584 * 512 * 2);
  CHECK_THROWS_WITH(ckpt.require(name, {3584, 3584}, Dtype::bf16),
                    Catch::Contains(path.string()) && Catch::Contains("tensor '" + name + "'") &&
                        Catch::Contains("expected [3584, 3584], found [3584, 512]"));
  CHECK_THROWS_WITH(ckpt.require(name, {3584, 512}, Dtype::f32),
                    Catch::Contains(path.string()) && Catch::Contains(name) && Catch::Contains("dtype: expected F32, found BF16"));
  CHECK_THROWS_WITH(ckpt.require("model.norm.weight", {3584}, Dtype::bf16),
                    Catch::Contains(path.string()) && Catch::Contains("no tensor 'model.norm.weight'"));
  CHECK_THROWS_AS(ckpt.file_of("model.norm.weight"), InputError);
  CHECK(ckpt.require_bf16_source("norm", {3584}).dtype == Dtype::f32);
  CHECK_THROWS_WITH(ckpt.require_bf16_source("ids", {2}),
                    Catch::Contains(path.string()) && Catch::Contains("tensor 'ids'") &&
                        Catch::Contains("expected BF16, F16 or F32, found I64"));
  CHECK_THROWS_WITH(ckpt.require_bf16_source("norm", {3585}), Catch::Contains("expected [3585], found [3584]"));
}

TEST_CASE("malformed tensor entries are refused naming the file and the tensor") {
  TempDir dir("bad-entries");
  const auto path = dir / "bad.safetensors";
  const std::vector<unsigned char> data(20);
  auto refused = [&](const std::string& header, const std::string& why, const std::string& tensor = "w") {
    INFO(header);
    write_raw(path, header, data);
    const std::string msg = open_error(path);
    CHECK_THAT(msg, Catch::Contains(path.string()) && Catch::Contains(why));
    if (!tensor.empty()) CHECK_THAT(msg, Catch::Contains("tensor '" + tensor + "'"));
  };
  // Truncated: the header promises more bytes than the file holds.
  refused(R"({"w": {"dtype": "BF16", "shape": [15], "data_offsets": [0, 30]}})",
          "data_offsets [0, 30] beyond the file's data section of 20 bytes");
  refused(R"({"w": {"dtype": "BF16", "shape": [2], "data_offsets": [18446744073709551611, 18446744073709551615]}})",
          "beyond the file's data section of 20 bytes");
  // Offsets that are no unsigned 64-bit integers: negative, past 2^64, fractional, not a pair.
  refused(R"({"w": {"dtype": "BF16", "shape": [2], "data_offsets": [-4, 0]}})", "data_offsets [-4,0] are not two integers");
  refused(R"({"w": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 18446744073709551616]}})", "are not two integers");
  refused(R"({"w": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4.0]}})", "are not two integers");
  refused(R"({"w": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 2, 4]}})", "are not two integers");
  refused(R"({"w": {"dtype": "BF16", "shape": [2], "data_offsets": "0-4"}})", "are not two integers");
  refused(R"({"w": {"dtype": "BF16", "shape": [2]}})", "no \"data_offsets\"");
  refused(R"({"w": {"dtype": "BF16", "shape": [2], "data_offsets": [8, 4]}})", "data_offsets [8, 4] end before they begin");
  // Sizes that do not match the shape.
  refused(R"({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 12]}})",
          "data_offsets [0, 12] hold 12 bytes, but shape [2, 2] of F32 needs 16");
  refused(R"({"w": {"dtype": "F32", "shape": [], "data_offsets": [0, 0]}})", "hold 0 bytes, but shape [] of F32 needs 4");
  // Shapes: negative, fractional, past 2^63, a product past 2^64 bytes, not a list.
  refused(R"({"w": {"dtype": "BF16", "shape": [-1, 4], "data_offsets": [0, 8]}})", "shape [-1,4] is not a list of non-negative");
  refused(R"({"w": {"dtype": "BF16", "shape": [1.5], "data_offsets": [0, 2]}})", "is not a list of non-negative");
  refused(R"({"w": {"dtype": "BF16", "shape": [9223372036854775808], "data_offsets": [0, 2]}})", "63-bit");
  refused(R"({"w": {"dtype": "BF16", "shape": [4294967296, 4294967296], "data_offsets": [0, 0]}})",
          "shape [4294967296, 4294967296] of BF16 is more than 2^64 bytes");
  refused(R"({"w": {"dtype": "BF16", "shape": [4294967296, 4294967296, 0], "data_offsets": [0, 2]}})",
          "hold 2 bytes, but shape [4294967296, 4294967296, 0] of BF16 needs 0");  // empty, however large
  refused(R"({"w": {"dtype": "BF16", "shape": 4, "data_offsets": [0, 8]}})", "no \"shape\" list");
  // Dtypes.
  refused(R"({"w": {"dtype": "Q4_K", "shape": [2], "data_offsets": [0, 4]}})", "unknown dtype \"Q4_K\"");
  refused(R"({"w": {"dtype": 16, "shape": [2], "data_offsets": [0, 4]}})", "no \"dtype\" string");
  refused(R"({"w": {"shape": [2], "data_offsets": [0, 4]}})", "no \"dtype\" string");
  // The entry itself.
  refused(R"({"w": [1, 2]})", "entry is [1,2], not an object");
  refused(R"({"w": null})", "entry is null");
  // Overlapping tensors name both.
  refused(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "v": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
          "tensor 'w' (data_offsets [0, 8]) and tensor 'v' (data_offsets [4, 12]) overlap");
  refused(R"({"a": {"dtype": "U8", "shape": [20], "data_offsets": [0, 20]}, "w": {"dtype": "U8", "shape": [1], "data_offsets": [19, 20]}})",
          "overlap");
  // Duplicate names: which entry is the tensor would depend on the parser.
  refused(R"({"w": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}, "w": {"dtype": "U8", "shape": [1], "data_offsets": [1, 2]}})",
          "names tensor 'w' twice", "");
  // __metadata__ must map strings to strings.
  refused(R"({"__metadata__": {"format": 1}})", "__metadata__ 'format' is 1, not a string", "");
  refused(R"({"__metadata__": [1]})", "__metadata__ is a JSON array", "");

  // Touching and empty tensors are fine, and so are gaps.
  write_raw(path,
            R"({"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]}, "b": {"dtype": "U8", "shape": [0], "data_offsets": [2, 2]},
                "c": {"dtype": "U8", "shape": [4], "data_offsets": [4, 8]}, "d": {"dtype": "U8", "shape": [2], "data_offsets": [18, 20]}})",
            data);
  CHECK(open_error(path).empty());
}

TEST_CASE("files that are not safetensors at all are refused with a clear error and never crash") {
  TempDir dir("garbage");
  const auto path = dir / "x.safetensors";
  const std::size_t fds = open_fds();

  std::ofstream(path).close();  // zero length
  CHECK_THAT(open_error(path), Catch::Contains(path.string()) && Catch::Contains("0 bytes long"));
  std::ofstream(path) << "abcde";
  CHECK_THAT(open_error(path), Catch::Contains("5 bytes long, shorter than"));

  // A header length past the end of the file, up to 2^63 and 2^64 - 1.
  write_raw(path, 1000, "{}");
  CHECK_THAT(open_error(path), Catch::Contains(path.string()) &&
                                   Catch::Contains("header length 1000 bytes is larger than the file (10 bytes)"));
  write_raw(path, 1ull << 63, "{}");
  CHECK_THAT(open_error(path), Catch::Contains("header length 9223372036854775808 bytes is larger than the file"));
  write_raw(path, ~0ull, "{}");
  CHECK_THAT(open_error(path), Catch::Contains("18446744073709551615"));
  // A length within a (sparse) file but past the bound is refused before anything is allocated.
  write_raw(path, kMaxSafetensorsHeaderBytes + 1, "{");
  fs::resize_file(path, kMaxSafetensorsHeaderBytes + 1000);
  CHECK_THAT(open_error(path), Catch::Contains("over the limit of 104857600 bytes"));

  // Headers cut short, not JSON, JSON of the wrong kind.
  const std::string cut = R"({"w": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}})";
  write_raw(path, cut.size(), cut.substr(0, 20));
  CHECK_THAT(open_error(path), Catch::Contains("is larger than the file"));
  write_raw(path, cut.substr(0, 30), std::vector<unsigned char>(4));
  CHECK_THAT(open_error(path), Catch::Contains(path.string()) && Catch::Contains("header is not valid JSON") &&
                                   Catch::Contains("parse error"));
  write_raw(path, "{\"w\": tru}");
  CHECK_THAT(open_error(path), Catch::Contains("not valid JSON") && Catch::Contains("parse error at line 1"));
  write_raw(path, std::string("{\"\xff\xfe\": 1}"));  // not UTF-8: the message quotes it escaped, so it stays UTF-8
  CHECK_THAT(open_error(path), Catch::Contains("not valid JSON") && Catch::Contains("\\xff") && !Catch::Contains("\xff"));
  write_raw(path, "");
  CHECK_THAT(open_error(path), Catch::Contains("not valid JSON"));
  write_raw(path, "[1, 2, 3]");
  CHECK_THAT(open_error(path), Catch::Contains("the header is a JSON array, not an object of tensors"));
  write_raw(path, "42      ");
  CHECK_THAT(open_error(path), Catch::Contains("the header is a JSON number"));
  write_raw(path, "\"text\"");
  CHECK_THAT(open_error(path), Catch::Contains("JSON string"));
  // Deep nesting is stopped while parsing.
  write_raw(path, "{\"w\": " + std::string(100000, '[') + std::string(100000, ']') + "}");
  CHECK_THAT(open_error(path), Catch::Contains("nests deeper than a safetensors header"));
  write_raw(path, std::string(1 << 20, '['));
  CHECK_THAT(open_error(path), Catch::Contains("nests deeper"));

  // Random bytes: with their own length field, and behind a plausible one.
  std::mt19937_64 rng(2024);
  for (int i = 0; i < 100; ++i) {
    std::vector<unsigned char> junk(1 + rng() % 4096);
    for (auto& b : junk) b = static_cast<unsigned char>(rng());
    {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(junk.data()), static_cast<std::streamsize>(junk.size()));
    }
    CHECK_THAT(open_error(path), Catch::Contains(path.string()));
    write_raw(path, std::string(junk.begin(), junk.end()));
    CHECK_THAT(open_error(path), Catch::Contains(path.string()));
    // And a valid header with a byte changed: refused or accepted, but never a crash.
    std::string header = R"({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, "__metadata__": {"a": "b"}})";
    header[rng() % header.size()] = static_cast<char>(rng());
    write_raw(path, header, std::vector<unsigned char>(24));
    (void)open_error(path);
  }

  CHECK_THAT(open_error(dir / "missing.safetensors"), Catch::Contains("missing.safetensors: cannot open"));
  CHECK_THAT(open_error(dir.path), Catch::Contains("not a regular file"));
  CHECK(open_fds() == fds);  // every refused file closed its descriptor
}

TEST_CASE("broken checkpoints are refused naming the index or shard and the tensor") {
  TempDir dir("bad-ckpt");
  auto write_index = [&](const std::string& text) { std::ofstream(dir / "model.safetensors.index.json") << text; };
  auto error = [&]() -> std::string {
    try {
      SafetensorsCheckpoint c(dir.path);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  const std::string index = (dir / "model.safetensors.index.json").string();

  CHECK_THAT(error(), Catch::Contains(dir.path.string()) &&
                          Catch::Contains("neither model.safetensors nor model.safetensors.index.json"));
  CHECK_THROWS_WITH(SafetensorsCheckpoint(dir / "nowhere"), Catch::Contains("no such checkpoint directory"));

  write_index(R"({"weight_map": {"a": "s1.safetensors",)");
  CHECK_THAT(error(), Catch::Contains(index) && Catch::Contains("not valid JSON") && Catch::Contains("parse error"));
  write_index(R"({"metadata": {}})");
  CHECK_THAT(error(), Catch::Contains(index) && Catch::Contains("no \"weight_map\" object"));
  write_index(R"([])");
  CHECK_THAT(error(), Catch::Contains("no \"weight_map\" object"));
  write_index(R"({"weight_map": {}})");
  CHECK_THAT(error(), Catch::Contains("weight_map is empty"));
  write_index(R"({"weight_map": {"a": 3}})");
  CHECK_THAT(error(), Catch::Contains(index) && Catch::Contains("tensor 'a': shard 3 is not a file name"));
  write_index(R"({"weight_map": {"a": "../model.safetensors"}})");
  CHECK_THAT(error(), Catch::Contains("tensor 'a': shard '../model.safetensors' is not a file inside"));
  write_index(R"({"weight_map": {"a": "/etc/passwd"}})");
  CHECK_THAT(error(), Catch::Contains("is not a file inside"));

  // A shard that is missing, one that lacks a mapped tensor, one that is broken.
  write_index(R"({"weight_map": {"a": "s1.safetensors", "b": "s2.safetensors"}})");
  write_safetensors(dir / "s1.safetensors", {{"a", "U8", {1}, {7}}});
  CHECK_THAT(error(), Catch::Contains((dir / "s2.safetensors").string()) && Catch::Contains("cannot open"));
  write_safetensors(dir / "s2.safetensors", {{"c", "U8", {1}, {7}}});
  CHECK_THAT(error(), Catch::Contains(index) && Catch::Contains("tensor 'b' is mapped to") &&
                          Catch::Contains("s2.safetensors, which holds no such tensor"));
  write_raw(dir / "s2.safetensors", R"({"b": {"dtype": "U8", "shape": [3], "data_offsets": [0, 3]}})", {1});
  CHECK_THAT(error(), Catch::Contains((dir / "s2.safetensors").string()) && Catch::Contains("tensor 'b'") &&
                          Catch::Contains("data_offsets [0, 3] beyond the file's data section of 1 bytes"));
  write_safetensors(dir / "s2.safetensors", {{"b", "U8", {1}, {9}}});
  CHECK(error().empty());

  // The shard files themselves name the file and tensor in require's errors.
  const SafetensorsCheckpoint ckpt(dir.path);
  CHECK_THROWS_WITH(ckpt.require("b", {2}, Dtype::u8),
                    Catch::Contains((dir / "s2.safetensors").string()) && Catch::Contains("tensor 'b'") &&
                        Catch::Contains("expected [2], found [1]"));
}
