#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include <hdf5.h>
#include <unistd.h>

#include "common/error.h"
#include "fresh_dir.h"
#include "results/result_file.h"

using namespace gpuaccept;
namespace fs = std::filesystem;
using gpuaccept::testing::fresh_dir;

namespace {

ResultFile sample() {
  ResultFile f;
  f.attributes = {{"phase", "discover"}, {"tool_version", "0.1.0"}, {"slurm_nodelist", "gpa-node[1-2]"}};
  for (int r = 0; r < 4; ++r) {
    Record rec;
    rec.phase = "discover";
    rec.rank = r;
    rec.node = r < 2 ? "gpa-node1" : "gpa-node2";
    rec.gpu_index = r % 2;
    rec.test = "gemm";
    rec.metric = "tflops";
    rec.value = 700.0 + r;
    rec.unit = "TFLOP/s";
    rec.params = {{"dtype", "bf16"}, {"m", "8192"}};
    rec.status = r == 3 ? Status::Fail : Status::Pass;
    rec.message = "rank " + std::to_string(r);
    f.records.push_back(rec);
  }
  Record check;
  check.rank = kJobLevel;
  check.test = "nodes_alike";
  check.status = Status::Skip;
  f.records.push_back(check);
  f.documents["inventory"] = {R"({"rank":0})", R"({"rank":1})", "", R"({"rank":3})"};
  return f;
}

}  // namespace

TEST_CASE("a results file round-trips through HDF5", "[hdf5]") {
  const fs::path dir = fresh_dir("roundtrip");
  const ResultFile in = sample();
  const fs::path written = write_result_file(dir / "discover.h5", in);
  CHECK(written == dir / "discover.h5");

  const ResultFile out = read_result_file(written);
  CHECK(out.records == in.records);
  CHECK(out.documents == in.documents);
  for (const auto& [k, v] : in.attributes) CHECK(out.attributes.at(k) == v);
  // No temporary file is left behind.
  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++files;
  CHECK(files == 1);
}

TEST_CASE("a file with no records and no documents round-trips", "[hdf5]") {
  const fs::path dir = fresh_dir("empty");
  ResultFile in;
  in.attributes = {{"phase", "smoke"}};
  const ResultFile out = read_result_file(write_result_file(dir / "smoke.h5", in));
  CHECK(out.records.empty());
  CHECK(out.documents.empty());
  CHECK(out.attributes.at("phase") == "smoke");
}

TEST_CASE("an existing results file is never overwritten", "[hdf5]") {
  const fs::path dir = fresh_dir("noclobber");
  ResultFile first = sample();
  ResultFile second = sample();
  second.records.resize(1);
  CHECK(write_result_file(dir / "discover.h5", first) == dir / "discover.h5");
  CHECK(write_result_file(dir / "discover.h5", second) == dir / "discover-2.h5");
  CHECK(read_result_file(dir / "discover.h5").records.size() == first.records.size());
  CHECK(read_result_file(dir / "discover-2.h5").records.size() == 1);
}

TEST_CASE("missing, truncated and foreign files give errors naming the file", "[hdf5]") {
  const fs::path dir = fresh_dir("bad");
  const fs::path good = write_result_file(dir / "smoke.h5", sample());

  const fs::path missing = dir / "nccl-scaling.h5";
  REQUIRE_THROWS_AS(read_result_file(missing), InputError);
  CHECK_THROWS_WITH(read_result_file(missing), Catch::Contains(missing.string()) && Catch::Contains("does not exist"));

  const fs::path truncated = dir / "truncated.h5";
  {
    std::ifstream in(good, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    std::ofstream(truncated, std::ios::binary) << bytes.substr(0, bytes.size() / 3);
  }
  CHECK_THROWS_WITH(read_result_file(truncated), Catch::Contains(truncated.string()));

  const fs::path foreign = dir / "foreign.h5";
  {
    const hid_t f = H5Fcreate(foreign.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    REQUIRE(f >= 0);
    H5Fclose(f);
  }
  CHECK_THROWS_WITH(read_result_file(foreign), Catch::Contains(foreign.string()) && Catch::Contains("not one gpuaccept wrote"));

  const fs::path text = dir / "notes.h5";
  std::ofstream(text) << "not hdf5\n";
  CHECK_THROWS_WITH(read_result_file(text), Catch::Contains(text.string()) && Catch::Contains("not an HDF5 file"));
}

namespace {

// A dataset of parent that claims a billion ints in chunks never written: a damaged dataspace's
// count in a file of a few kB.
void create_unwritten_billion(hid_t parent, const char* name) {
  const hsize_t dims[1] = {1000000000}, chunk[1] = {1024};
  const hid_t space = H5Screate_simple(1, dims, nullptr);
  const hid_t plist = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(plist, 1, chunk);
  const hid_t ds = H5Dcreate2(parent, name, H5T_NATIVE_INT, space, H5P_DEFAULT, plist, H5P_DEFAULT);
  REQUIRE(ds >= 0);
  H5Dclose(ds);
  H5Pclose(plist);
  H5Sclose(space);
}

}  // namespace

TEST_CASE("a records dataset that claims more records than the file holds is refused before allocating", "[hdf5]") {
  // A billion records in a file of a few kB (chunks never written): a damaged dataspace of this
  // kind made the reader ask for 257 GB (fuzzing, 2026-11-25). The file's size bounds the count.
  const fs::path dir = fresh_dir("claims");
  const fs::path path = dir / "smoke.h5";
  {
    const hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    REQUIRE(f >= 0);
    const hid_t scalar = H5Screate(H5S_SCALAR);
    const hid_t attr = H5Acreate2(f, "gpuaccept_format", H5T_NATIVE_INT, scalar, H5P_DEFAULT, H5P_DEFAULT);
    const int version = kResultsFormatVersion;
    H5Awrite(attr, H5T_NATIVE_INT, &version);
    create_unwritten_billion(f, "records");
    H5Aclose(attr);
    H5Sclose(scalar);
    H5Fclose(f);
  }
  REQUIRE(fs::file_size(path) < 100000);
  CHECK_THROWS_WITH(read_result_file(path), Catch::Contains(path.string()) &&
                                                Catch::Contains("claims 1000000000 records") &&
                                                Catch::Contains("damaged"));
  fs::remove_all(dir);
}

TEST_CASE("a document dataset that claims more strings than the file holds is refused before allocating", "[hdf5]") {
  // The same for /documents/<name>: a damaged dataspace claimed 2^55 strings in a 22 kB file and
  // the reader asked for their pointers first (fuzzing, 2026-11-26; the input is in
  // tests/fuzz/regressions/result_file).
  const fs::path dir = fresh_dir("claims_doc");
  const fs::path path = write_result_file(dir / "discover.h5", sample());
  {
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    REQUIRE(f >= 0);
    const hid_t docs = H5Lexists(f, "documents", H5P_DEFAULT) > 0 ? H5Gopen2(f, "documents", H5P_DEFAULT)
                                                                    : H5Gcreate2(f, "documents", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    REQUIRE(docs >= 0);
    create_unwritten_billion(docs, "damaged");
    H5Gclose(docs);
    H5Fclose(f);
  }
  REQUIRE(fs::file_size(path) < 100000);
  CHECK_THROWS_WITH(read_result_file(path), Catch::Contains(path.string()) && Catch::Contains("documents/damaged") &&
                                                Catch::Contains("claims 1000000000 strings") &&
                                                Catch::Contains("damaged"));
  fs::remove_all(dir);
}

TEST_CASE("a record whose numbers are out of bounds marks its file as damaged", "[hdf5]") {
  // libhdf5 reads a flipped bit in gpu_index as readily as a good value; the report would
  // then draw a grid with a billion GPU columns.
  const fs::path dir = fresh_dir("bounds");
  ResultFile f = sample();
  f.records[2].gpu_index = 1073741826;
  const fs::path path = write_result_file(dir / "smoke.h5", f);
  CHECK_THROWS_AS(read_result_file(path), InputError);
  CHECK_THROWS_WITH(read_result_file(path), Catch::Contains("damaged results file " + path.string()) &&
                                                Catch::Contains("record 3 of 5") &&
                                                Catch::Contains("gpu_index 1073741826 is outside -1..255"));
  f = sample();
  f.records[0].rank = -7;
  CHECK_THROWS_WITH(read_result_file(write_result_file(dir / "ddp.h5", f)), Catch::Contains("rank -7 is outside"));
  f = sample();
  f.records[0].gpu_index = 255;  // the largest index a node may have
  f.records[1].rank = kJobLevel;
  CHECK(read_result_file(write_result_file(dir / "nccl-scaling.h5", f)).records == f.records);
}
