// The verification formulas (expected.h, the same code the device kernel runs) against a
// host simulation of each collective's semantics; and the bf16 exactness argument.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "nccl-scaling/collective.h"
#include "nccl-scaling/expected.h"

using namespace gpuaccept::nccl_scaling;

namespace {

ExpectArgs args_for(CollId id, int rank, int n, std::uint64_t count) {
  ExpectArgs a;
  a.coll = id;
  a.rank = rank;
  a.nranks = n;
  a.root = 0;
  a.count = count;
  a.stride = sum_stride(n);
  return a;
}

// Inputs of every rank, in elements, as the fill kernel writes them.
std::vector<std::vector<int>> inputs(CollId id, int n, std::uint64_t count, std::size_t send) {
  std::vector<std::vector<int>> in(static_cast<std::size_t>(n));
  for (int q = 0; q < n; ++q)
    for (std::uint64_t i = 0; i < send; ++i) in[q].push_back(input_value(args_for(id, q, n, count), q, i));
  return in;
}

// What rank r's output holds after the collective, from its definition.
std::vector<int> simulate(CollId id, int r, int n, std::uint64_t c, const std::vector<std::vector<int>>& in) {
  std::vector<int> out;
  switch (id) {
    case CollId::AllReduce:
    case CollId::Reduce:
      for (std::uint64_t i = 0; i < c; ++i) {
        int s = 0;
        for (int q = 0; q < n; ++q) s += in[q][i];
        out.push_back(s);
      }
      break;
    case CollId::ReduceScatter:
      for (std::uint64_t j = 0; j < c; ++j) {
        int s = 0;
        for (int q = 0; q < n; ++q) s += in[q][r * c + j];
        out.push_back(s);
      }
      break;
    case CollId::AllGather:
      for (int q = 0; q < n; ++q)
        for (std::uint64_t j = 0; j < c; ++j) out.push_back(in[q][j]);
      break;
    case CollId::Broadcast:
      for (std::uint64_t j = 0; j < c; ++j) out.push_back(in[0][j]);
      break;
    case CollId::AllToAll:
      for (int q = 0; q < n; ++q)
        for (std::uint64_t j = 0; j < c; ++j) out.push_back(in[q][r * c + j]);
      break;
    case CollId::SendRecv:
      for (std::uint64_t j = 0; j < c; ++j) out.push_back(in[(r - 1 + n) % n][j]);
      break;
  }
  return out;
}

std::size_t wrong(const std::vector<int>& out, const ExpectArgs& a) {
  std::size_t w = 0;
  for (std::size_t i = 0; i < out.size(); ++i) w += out[i] != expected_output(a, i);
  return w;
}

// bf16 round-to-nearest-even of a float, as the GPU stores it.
float to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);
  u &= 0xffff0000u;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

TEST_CASE("expected outputs match every collective's semantics") {
  for (const Collective* coll : all_collectives()) {
    for (int n : {2, 3, 5, 8, 33, 70}) {
      const std::uint64_t c = 37;  // elements per rank (the count passed to NCCL)
      const std::uint64_t param = c;
      const std::size_t send = coll->id == CollId::ReduceScatter || coll->id == CollId::AllToAll ? n * c : c;
      const auto in = inputs(coll->id, n, param, send);
      for (int r = 0; r < n; ++r) {
        if (coll->id == CollId::Reduce && r != 0) continue;  // only the root's output is defined
        INFO(coll->name << " n=" << n << " rank " << r);
        const auto out = simulate(coll->id, r, n, param, in);
        CHECK(wrong(out, args_for(coll->id, r, n, param)) == 0);
      }
    }
  }
}

TEST_CASE("wrong placements and missing contributions are caught") {
  const int n = 8;
  const std::uint64_t c = 64;
  SECTION("all_gather with two blocks swapped") {
    const auto in = inputs(CollId::AllGather, n, c, c);
    auto out = simulate(CollId::AllGather, 3, n, c, in);
    std::swap_ranges(out.begin(), out.begin() + c, out.begin() + c);
    CHECK(wrong(out, args_for(CollId::AllGather, 3, n, c)) > c);  // nearly every element of both blocks
  }
  SECTION("reduce_scatter delivering another rank's slice") {
    const auto in = inputs(CollId::ReduceScatter, n, c, n * c);
    const auto out = simulate(CollId::ReduceScatter, 5, n, c, in);
    CHECK(wrong(out, args_for(CollId::ReduceScatter, 4, n, c)) > c / 2);
  }
  SECTION("all_reduce missing one rank's input") {
    auto in = inputs(CollId::AllReduce, n, c, c);
    std::fill(in[6].begin(), in[6].end(), 0);
    CHECK(wrong(simulate(CollId::AllReduce, 0, n, c, in), args_for(CollId::AllReduce, 0, n, c)) == c);
  }
  SECTION("an untouched (poisoned or zero) output") {
    const std::vector<int> zeros(c, 0);
    for (CollId id : {CollId::AllReduce, CollId::AllGather, CollId::SendRecv, CollId::Broadcast})
      CHECK(wrong(zeros, args_for(id, 1, n, c)) == c);
  }
  SECTION("sendrecv from the wrong neighbour") {
    const auto in = inputs(CollId::SendRecv, n, c, c);
    auto out = simulate(CollId::SendRecv, 2, n, c, in);
    CHECK(wrong(out, args_for(CollId::SendRecv, 3, n, c)) > c / 2);
  }
}

TEST_CASE("summed values stay exact in bf16 at any scale") {
  for (int n : {1, 2, 8, 31, 32, 33, 64, 100, 256, 1000, 4096}) {
    const int stride = sum_stride(n);
    CHECK(stride >= 1);
    for (std::uint64_t i = 0; i < 2000; i += 7) {
      int contributors = 0, partial = 0, biggest = 0;
      for (int q = 0; q < n; ++q) {
        const int v = sum_input(q, i, stride);
        CHECK(v >= 0);
        CHECK(v <= 8);
        if (v) ++contributors;
        partial += v;
        biggest = std::max(biggest, partial);
      }
      INFO("n=" << n << " i=" << i);
      CHECK(contributors <= kMaxContributors);
      CHECK(contributors >= (n >= 2 ? std::min(n, 2) : 1));  // never a single contributor when n >= 2
      CHECK(biggest <= 256);  // every partial sum, in any order (all terms >= 0)
      CHECK(partial == sum_over_ranks(i, n, stride));
    }
  }
  // Every integer up to 256 survives bf16 storage; 257 does not (why the bound is 256).
  for (int v = 0; v <= 256; ++v) CHECK(to_bf16(static_cast<float>(v)) == static_cast<float>(v));
  CHECK(to_bf16(257.0f) != 257.0f);
  for (std::uint64_t i = 0; i < 5000; ++i) {
    const int v = copy_input(static_cast<std::int64_t>(i % 97), i);
    CHECK(v >= 1);
    CHECK(v <= kCopyModulus);
  }
}

TEST_CASE("the pattern differs between ranks and neighbouring elements") {
  int same_rank = 0, same_elem = 0;
  for (std::uint64_t i = 0; i < 1000; ++i) {
    same_rank += copy_input(3, i) == copy_input(4, i);
    same_elem += copy_input(3, i) == copy_input(3, i + 1);
  }
  CHECK(same_rank < 20);  // ~1/251 by chance
  CHECK(same_elem < 20);
}
