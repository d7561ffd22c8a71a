// What every rank puts in its input and what each collective must produce, as functions
// of (rank, element index) only: the verification kernel computes the expected value of
// every output element on the device, and the unit tests check the same functions on the
// host against a simulation of each collective's semantics.
//
// Values are small integers, exact in float and in bf16 (integers up to 256 are exact in
// bf16's 8-bit significand):
//  - copied collectives (all_gather, broadcast, alltoall, sendrecv): a hash of (rank,
//    element) mapped to 1..251, so a block landing at the wrong offset, or from the wrong
//    rank, shows up at almost every element;
//  - summed collectives (all_reduce, reduce, reduce_scatter): at element i only the ranks
//    q with (q + i) % stride == 0 contribute, each a hash mapped to 1..8, the rest 0.
//    stride = ceil(nranks / 32), so at most 32 ranks contribute to an element and every
//    partial sum, in whatever order NCCL adds, stays within 8 * 32 = 256: exact in bf16.
//    Contributions are positive, so a missing or doubled rank always changes the sum, and
//    every element has at least one contributor, so a zero or untouched output is wrong.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define GPA_HD __host__ __device__
#else
#define GPA_HD
#endif

namespace gpuaccept::nccl_scaling {

enum class CollId : int { AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, AllToAll, SendRecv };

// Largest number of ranks whose values are summed into one element.
inline constexpr int kMaxContributors = 32;
inline constexpr int kCopyModulus = 251;

// A 32-bit hash of (rank, element) (Wellons' lowbias32 finaliser): cheap on the GPU,
// and no two nearby elements or ranks share a pattern.
GPA_HD inline std::uint32_t mix(std::uint64_t rank, std::uint64_t i, std::uint32_t salt) {
  std::uint32_t x = static_cast<std::uint32_t>(i) ^ (static_cast<std::uint32_t>(i >> 32) * 0x9E3779B9u) ^
                    (static_cast<std::uint32_t>(rank) * 0x85EBCA6Bu) ^ salt;
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

GPA_HD inline int copy_input(std::int64_t rank, std::uint64_t i) {
  return static_cast<int>(mix(static_cast<std::uint64_t>(rank), i, 0x2545F491u) % kCopyModulus) + 1;
}

GPA_HD inline int sum_input(std::int64_t rank, std::uint64_t i, int stride) {
  if ((static_cast<std::uint64_t>(rank) + i) % static_cast<std::uint64_t>(stride) != 0) return 0;
  return static_cast<int>(mix(static_cast<std::uint64_t>(rank), i, 0x68E31DA4u) & 7u) + 1;
}

// Sum over ranks 0..nranks-1 of sum_input(q, i): visits only the <= 32 contributors.
GPA_HD inline int sum_over_ranks(std::uint64_t i, int nranks, int stride) {
  const std::uint64_t s = static_cast<std::uint64_t>(stride);
  int total = 0;
  for (std::uint64_t q = (s - i % s) % s; q < static_cast<std::uint64_t>(nranks); q += s)
    total += static_cast<int>(mix(q, i, 0x68E31DA4u) & 7u) + 1;
  return total;
}

// Host and device: the stride that keeps <= kMaxContributors ranks per element.
GPA_HD inline int sum_stride(int nranks) { return nranks <= kMaxContributors ? 1 : (nranks + kMaxContributors - 1) / kMaxContributors; }

GPA_HD inline bool is_summed(CollId c) {
  return c == CollId::AllReduce || c == CollId::Reduce || c == CollId::ReduceScatter;
}

struct ExpectArgs {
  CollId coll = CollId::AllReduce;
  int rank = 0;    // this rank, in the collective's communicator
  int nranks = 1;
  int root = 0;    // broadcast, reduce
  std::uint64_t count = 0;  // the count passed to NCCL (nccl-tests' paramcount)
  int stride = 1;  // sum_stride(nranks)
};

// What `rank` puts at element i of its input buffer.
GPA_HD inline int input_value(const ExpectArgs& a, int rank, std::uint64_t i) {
  return is_summed(a.coll) ? sum_input(rank, i, a.stride) : copy_input(rank, i);
}

// What must be at element idx of this rank's output buffer.
GPA_HD inline int expected_output(const ExpectArgs& a, std::uint64_t idx) {
  const std::uint64_t c = a.count;
  switch (a.coll) {
    case CollId::AllReduce:
    case CollId::Reduce:  // checked on the root only
      return sum_over_ranks(idx, a.nranks, a.stride);
    case CollId::ReduceScatter:  // this rank's slice of the sum
      return sum_over_ranks(static_cast<std::uint64_t>(a.rank) * c + idx, a.nranks, a.stride);
    case CollId::AllGather:  // block q comes from rank q
      return copy_input(static_cast<std::int64_t>(idx / c), idx % c);
    case CollId::Broadcast:
      return copy_input(a.root, idx);
    case CollId::AllToAll:  // block q is rank q's block for this rank
      return copy_input(static_cast<std::int64_t>(idx / c), static_cast<std::uint64_t>(a.rank) * c + idx % c);
    case CollId::SendRecv:  // from the ring neighbour below
      return copy_input((a.rank - 1 + a.nranks) % a.nranks, idx);
  }
  return -1;
}

}  // namespace gpuaccept::nccl_scaling
