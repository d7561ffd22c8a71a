#include "nccl-scaling/collective.h"

namespace gpuaccept::nccl_scaling {

std::size_t per_rank_count(std::size_t count, std::size_t elt, int nranks) {
  const std::size_t block = elt >= 16 ? 1 : 16 / elt;  // elements per 16 bytes
  return (count / static_cast<std::size_t>(nranks)) / block * block;
}

const std::vector<const Collective*>& all_collectives() {
  static const std::vector<const Collective*> all = {&kAllReduce, &kAllGather, &kReduceScatter, &kBroadcast,
                                                     &kReduce,    &kAllToAll,  &kSendRecv};
  return all;
}

const Collective* find_collective(std::string_view name) {
  for (const auto* c : all_collectives())
    if (c->name == name) return c;
  return nullptr;
}

}  // namespace gpuaccept::nccl_scaling
