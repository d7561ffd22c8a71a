#include <catch2/catch.hpp>

#include <cstring>

#include "common/error.h"
#include "world/world.h"

using namespace gpuaccept;

TEST_CASE("the single-process world is rank 0 of 1 and its collectives are the identity", "[world]") {
  auto w = make_single_world();
  CHECK(w->rank() == 0);
  CHECK(w->size() == 1);
  CHECK(w->local_rank() == 0);
  CHECK(w->local_size() == 1);
  CHECK(w->node_index() == 0);
  CHECK(w->node_count() == 1);
  CHECK(w->hostname() == local_hostname());
  CHECK(w->backend() == "single");

  const auto all = w->allgather_string("payload");
  REQUIRE(all.size() == 1);
  CHECK(all[0] == "payload");
  CHECK(w->broadcast_string("id", 0) == "id");
  CHECK(w->gather_string("mine", 0) == std::vector<std::string>{"mine"});  // the root receives
  CHECK(w->any(true));
  CHECK_FALSE(w->any(false));
  w->barrier();
}

TEST_CASE("the backend follows the launcher's environment", "[world]") {
  CHECK(choose_backend(nullptr, nullptr) == WorldBackend::Single);
  CHECK(choose_backend("slurm.pmix.12.0", "0") == WorldBackend::Pmix);
  CHECK(choose_backend(nullptr, "3") == WorldBackend::MissingPmix);
  CHECK(choose_backend("", "") == WorldBackend::Single);
}

TEST_CASE("srun without --mpi=pmix is refused with the missing flag named", "[world]") {
  ::unsetenv("PMIX_NAMESPACE");
  ::setenv("SLURM_PROCID", "1", 1);
  CHECK_THROWS_WITH(make_world(), Catch::Contains("--mpi=pmix"));
  ::unsetenv("SLURM_PROCID");
  CHECK(make_world()->backend() == "single");
}
