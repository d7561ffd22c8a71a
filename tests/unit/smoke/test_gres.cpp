#include <catch2/catch.hpp>

#include "slurm/gres.h"

using namespace gpuaccept;

TEST_CASE("gres_gpu_count reads Slurm's GRES strings", "[smoke][gres]") {
  CHECK(gres_gpu_count("gpu:h200:8(S:0-1)") == 8);
  CHECK(gres_gpu_count("gpu:8") == 8);
  CHECK(gres_gpu_count("gpu:2") == 2);
  CHECK(gres_gpu_count("gpu:a100:2,gpu:v100:1") == 3);
  CHECK(gres_gpu_count("gpu:h200:4(S:0,2),nic:2") == 4);  // comma inside the socket list
  CHECK(gres_gpu_count("nic:2,gpu:h100:4(S:0)") == 4);
  CHECK(gres_gpu_count("gpu") == 1);
  CHECK(gres_gpu_count("gpu:h200") == 1);  // typed, count omitted
  CHECK(gres_gpu_count("gpu:no_consume:4") == 4);
  CHECK(gres_gpu_count("") == 0);
  CHECK(gres_gpu_count("(null)") == 0);
  CHECK(gres_gpu_count("nic:2") == 0);
  CHECK(gres_gpu_count("gpumem:80G") == 0);  // a different GRES that starts with "gpu"
}

TEST_CASE("gpu_request_count reads per-task and per-node requests", "[smoke][gres]") {
  CHECK(gpu_request_count("2") == 2);
  CHECK(gpu_request_count("h200:1") == 1);
  CHECK(gpu_request_count("") == -1);
  CHECK(gpu_request_count("h200") == -1);
}
