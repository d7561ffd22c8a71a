#include "results/record_bounds.h"

#include <fmt/format.h>

#include "common/error.h"

namespace gpuaccept {

void check_record_bounds(const std::filesystem::path& file, const std::vector<Record>& records) {
  for (std::size_t i = 0; i < records.size(); ++i) {
    const Record& r = records[i];
    const char* field = nullptr;
    int value = 0, max = 0;
    if (r.rank < kJobLevel || r.rank > kMaxRank) field = "rank", value = r.rank, max = kMaxRank;
    else if (r.gpu_index < -1 || r.gpu_index > kMaxGpuIndex) field = "gpu_index", value = r.gpu_index, max = kMaxGpuIndex;
    if (field)
      throw InputError(fmt::format("damaged results file {}: record {} of {} ({} '{}'): {} {} is outside -1..{}",
                                   file.string(), i + 1, records.size(), r.phase, r.test, field, value, max));
  }
}

}  // namespace gpuaccept
