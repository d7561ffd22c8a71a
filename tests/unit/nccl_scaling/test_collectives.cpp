// The collectives' byte counts and bus-bandwidth factors against nccl-tests' definitions
// (src/<collective>.cu: getCollByteCount, getBw), so our figures mean the same.
#include <catch2/catch.hpp>

#include "nccl-scaling/collective.h"

using namespace gpuaccept::nccl_scaling;

namespace {

// nccl-tests' getBw numerator: the bytes algbw divides by, from paramcount.
double nccl_tests_alg_bytes(CollId id, std::size_t param, std::size_t elt, int n) {
  switch (id) {
    case CollId::AllReduce:
    case CollId::Broadcast:
    case CollId::Reduce:
    case CollId::SendRecv: return static_cast<double>(param * elt);
    case CollId::AllGather:
    case CollId::ReduceScatter:
    case CollId::AllToAll: return static_cast<double>(param * elt * static_cast<std::size_t>(n));
  }
  return 0;
}

}  // namespace

TEST_CASE("bus bandwidth factors are nccl-tests'") {
  CHECK(kAllReduce.bus_factor(8) == Approx(2.0 * 7 / 8));
  CHECK(kAllReduce.bus_factor(2) == Approx(1.0));
  CHECK(kAllGather.bus_factor(8) == Approx(7.0 / 8));
  CHECK(kReduceScatter.bus_factor(16) == Approx(15.0 / 16));
  CHECK(kAllToAll.bus_factor(4) == Approx(3.0 / 4));
  CHECK(kBroadcast.bus_factor(8) == 1.0);
  CHECK(kReduce.bus_factor(8) == 1.0);
  CHECK(kSendRecv.bus_factor(8) == 1.0);
}

TEST_CASE("all_reduce, broadcast, reduce, sendrecv: size is the per-rank message") {
  for (const Collective* c : {&kAllReduce, &kBroadcast, &kReduce, &kSendRecv}) {
    const ElemCounts k = counts_for_size(*c, 64 << 20, 4, 8);
    CHECK(k.param == (64u << 20) / 4);
    CHECK(k.send == k.param);
    CHECK(k.recv == k.param);
    CHECK(k.size_bytes(4) == (64u << 20));
  }
}

TEST_CASE("all_gather: nccl-tests rounds the per-rank count to 16 bytes; size is the gathered buffer") {
  // 1 MiB of float over 8 ranks: 32768 elements each.
  ElemCounts k = counts_for_size(kAllGather, 1 << 20, 4, 8);
  CHECK(k.param == 32768);
  CHECK(k.send == 32768);
  CHECK(k.recv == 8 * 32768);
  CHECK(k.send_inplace_offset == 32768);
  CHECK(k.recv_inplace_offset == 0);
  CHECK(k.size_bytes(4) == (1u << 20));
  // 1000 B of bf16 over 3 ranks: 500 elements -> 166 per rank -> 160 (16-byte blocks).
  k = counts_for_size(kAllGather, 1000, 2, 3);
  CHECK(k.param == 160);
  CHECK(k.size_bytes(2) == 960);
  // Too small to give every rank a 16-byte block: nothing to run.
  CHECK(counts_for_size(kAllGather, 8, 4, 8).param == 0);
  CHECK(counts_for_size(kAllGather, 128, 4, 8).param == 4);
}

TEST_CASE("reduce_scatter and alltoall mirror nccl-tests") {
  ElemCounts k = counts_for_size(kReduceScatter, 1 << 20, 2, 4);
  CHECK(k.param == (1u << 20) / 2 / 4);
  CHECK(k.send == 4 * k.param);
  CHECK(k.recv == k.param);
  CHECK(k.send_inplace_offset == 0);
  CHECK(k.recv_inplace_offset == k.param);
  k = counts_for_size(kAllToAll, 1 << 20, 4, 6);
  CHECK(k.param == ((1u << 20) / 4 / 6) / 4 * 4);
  CHECK(k.send == 6 * k.param);
  CHECK(k.recv == 6 * k.param);
}

TEST_CASE("the size column is what algbw divides by, for every collective") {
  for (const Collective* c : all_collectives())
    for (int n : {2, 3, 8, 16, 24})
      for (std::size_t elt : {std::size_t{2}, std::size_t{4}})
        for (std::size_t size : {std::size_t{4096}, std::size_t{1} << 20, std::size_t{3} << 28}) {
          const ElemCounts k = counts_for_size(*c, size, elt, n);
          INFO(c->name << " n=" << n << " elt=" << elt << " size=" << size);
          CHECK(static_cast<double>(k.size_bytes(elt)) == nccl_tests_alg_bytes(c->id, k.param, elt, n));
          CHECK(k.size_bytes(elt) <= size);
        }
}

TEST_CASE("collectives are found by their record names; in place where it is defined") {
  REQUIRE(all_collectives().size() == 7);
  for (const Collective* c : all_collectives()) CHECK(find_collective(c->name) == c);
  CHECK(find_collective("allreduce") == nullptr);
  CHECK_FALSE(kAllToAll.has_inplace);
  CHECK_FALSE(kSendRecv.has_inplace);
  CHECK(kAllReduce.has_inplace);
  CHECK(kBroadcast.rooted);
  CHECK(kReduce.rooted);
  CHECK_FALSE(kAllGather.rooted);
}
