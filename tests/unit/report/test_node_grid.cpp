// The node x GPU grid: one column per GPU index, and a notice where records give one index to
// several GPUs (files written when every rank Slurm bound to one GPU called it "GPU 0").
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "html/html_sections.h"
#include "model/node_grid.h"
#include "model/report.h"

using namespace gpuaccept;
using namespace gpuaccept::report;

namespace {

Record gemm_on(const std::string& node, int gpu_index, const std::string& uuid, int rank) {
  Record r;
  r.phase = "smoke";
  r.test = "gemm";
  r.metric = "tflops";
  r.node = node;
  r.rank = rank;
  r.gpu_index = gpu_index;
  r.gpu_uuid = uuid;
  r.value = 700;
  return r;
}

}  // namespace

TEST_CASE("each GPU of a node has its own column, and nothing is ambiguous", "[grid]") {
  std::vector<Record> records;
  for (int g = 0; g < 4; ++g) records.push_back(gemm_on("gpa-node1", g, "GPU-" + std::to_string(g), g));
  records.push_back(gemm_on("gpa-node1", 2, "GPU-2", 2));  // the same GPU again: one GPU
  const NodeGrid grid = build_node_grid({"gpa-node1"}, records, {});
  CHECK(grid.gpus == 4);
  for (int g = 0; g < 4; ++g) REQUIRE(grid.cell("gpa-node1", g) != nullptr);
  CHECK(grid.cell("gpa-node1", 2)->tally.total() == 2);
  CHECK(grid.ambiguous.empty());
}

TEST_CASE("one index given to several GPUs is named, and the HTML says the column mixes them", "[grid]") {
  // Four ranks bound to one GPU each, every one recorded as GPU 0 (the old numbering); another
  // node with a hostname that needs escaping, numbered right.
  std::vector<Record> records;
  for (int rank = 0; rank < 4; ++rank) records.push_back(gemm_on("gpa-node1", 0, "GPU-" + std::to_string(rank), rank));
  records.push_back(gemm_on("n<2>", 0, "GPU-x", 4));
  records.push_back(gemm_on("n<2>", 1, "GPU-y", 5));
  Report r;
  r.grid = build_node_grid({"gpa-node1", "n<2>"}, records, {});
  CHECK(r.grid.gpus == 2);
  REQUIRE(r.grid.ambiguous.size() == 1);
  CHECK_THAT(r.grid.ambiguous[0], Catch::Contains("gpa-node1 GPU 0 is 4 different GPUs") &&
                                      Catch::Contains("GPU-0, GPU-1, GPU-2, GPU-3"));
  const std::string html = node_grid_section(r);
  CHECK_THAT(html, Catch::Contains("Some GPU columns mix several GPUs") &&
                       Catch::Contains("gpa-node1 GPU 0 is 4 different GPUs") && Catch::Contains("n&lt;2&gt;") &&
                       !Catch::Contains("n<2>"));

  SECTION("records without a UUID are not counted as other GPUs") {
    std::vector<Record> plain = {gemm_on("gpa-node1", 0, "", 0), gemm_on("gpa-node1", 0, "GPU-0", 1)};
    CHECK(build_node_grid({"gpa-node1"}, plain, {}).ambiguous.empty());
  }
}
