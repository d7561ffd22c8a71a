#include <catch2/catch.hpp>

#include "common/error.h"
#include "results/record.h"

using namespace gpuaccept;

TEST_CASE("status text round-trips and orders by severity", "[record]") {
  for (Status s : {Status::Pass, Status::Skip, Status::Fail, Status::Error}) CHECK(parse_status(to_string(s)) == s);
  CHECK_THROWS_AS(parse_status("OK"), InputError);
  CHECK(most_severe(Status::Pass, Status::Skip) == Status::Skip);
  CHECK(most_severe(Status::Fail, Status::Skip) == Status::Fail);
  CHECK(most_severe(Status::Fail, Status::Error) == Status::Error);
  CHECK(is_failure(Status::Fail));
  CHECK(is_failure(Status::Error));
  CHECK_FALSE(is_failure(Status::Skip));
}

TEST_CASE("records survive the JSON wire encoding used for gathering", "[record]") {
  Record a;
  a.phase = "nccl-scaling";
  a.job_id = "42";
  a.rank = 3;
  a.node = "node<7>";
  a.gpu_index = 1;
  a.gpu_uuid = "GPU-1234";
  a.test = "all_reduce";
  a.metric = "busbw";
  a.value = 366.7;
  a.unit = "GB/s";
  a.params = {{"bytes", "8589934592"}, {"dtype", "float"}};
  a.status = Status::Fail;
  a.message = "unicode ✓ and \"quotes\"";
  Record b;  // a check: no value
  b.test = "gpus_per_node";
  b.rank = kJobLevel;
  b.status = Status::Skip;

  const auto decoded = decode_records(encode_records({a, b}));
  REQUIRE(decoded.size() == 2);
  CHECK(decoded[0] == a);
  CHECK(decoded[1] == b);
  CHECK_FALSE(decoded[1].has_value());
}

TEST_CASE("params encode as a JSON object", "[record]") {
  CHECK(encode_params({{"b", "2"}, {"a", "1"}}) == R"({"a":"1","b":"2"})");
  CHECK(decode_params("").empty());
  CHECK(decode_params(R"({"bytes":"8","n":4})") == Params{{"bytes", "8"}, {"n", "4"}});
}

TEST_CASE("a failure caused by a peer is marked in the params, a failed PMIx call is one", "[record]") {
  Record r;
  CHECK_FALSE(caused_by_peer(r));
  r.params[kCauseParam] = kCausePeer;
  CHECK(caused_by_peer(r));
  r.params[kCauseParam] = "self";
  CHECK_FALSE(caused_by_peer(r));

  const auto thrown = [](std::string_view library) -> CallError {
    try {
      raise_call_error(library, "call", "why");
    } catch (const CallError& e) {
      return e;
    }
    return CallError("", "", "", "");
  };
  CHECK(is_world_failure(thrown("PMIx")));
  CHECK_FALSE(is_world_failure(thrown("CUDA")));
  CHECK_FALSE(is_world_failure(std::runtime_error("PMIx call failed")));  // text alone is not enough
}
