// The single-process World: a phase started by hand, outside srun. Collectives are
// the identity, so the same phase code runs unchanged.
#include "world/world.h"

namespace gpuaccept {
namespace {

class SingleWorld final : public World {
 public:
  SingleWorld() { place_ranks(0, 1, local_hostname()); }
  std::string backend() const override { return "single"; }
  std::vector<Bytes> allgather(std::span<const std::byte> mine) override {
    return {Bytes(mine.begin(), mine.end())};
  }
  Bytes broadcast(std::span<const std::byte> data, int) override { return Bytes(data.begin(), data.end()); }
  void barrier() override {}
};

}  // namespace

std::unique_ptr<World> make_single_world() { return std::make_unique<SingleWorld>(); }

}  // namespace gpuaccept
