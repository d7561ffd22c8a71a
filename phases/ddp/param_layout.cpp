#include "ddp/param_layout.h"

namespace gpuaccept::ddp {

namespace {
struct TensorRow {
  const char* name;
  bool per_layer;                        // a copy in each block: shape gains a leading L
  std::vector<std::size_t> layer_shape;  // one layer's (or the only) shape
};
}  // namespace

ParamLayout::ParamLayout(const GptConfig& config) {
  validate(config);
  const std::size_t V = config.vocab, maxT = config.max_seq, L = config.layers, C = config.channels;
  // The order of this list is the order in the buffer and must match enum Param.
  const std::vector<TensorRow> rows = {
      {"wte", false, {V, C}},          {"wpe", false, {maxT, C}},
      {"ln1w", true, {C}},             {"ln1b", true, {C}},
      {"qkvw", true, {3 * C, C}},      {"qkvb", true, {3 * C}},
      {"attprojw", true, {C, C}},      {"attprojb", true, {C}},
      {"ln2w", true, {C}},             {"ln2b", true, {C}},
      {"fcw", true, {4 * C, C}},       {"fcb", true, {4 * C}},
      {"fcprojw", true, {C, 4 * C}},   {"fcprojb", true, {C}},
      {"lnfw", false, {C}},            {"lnfb", false, {C}},
  };
  for (const auto& row : rows) {
    ParamTensor t{.name = row.name, .shape = {}, .offset = total_, .size = 1, .per_layer = row.per_layer};
    if (row.per_layer) t.shape.push_back(L);
    t.shape.insert(t.shape.end(), row.layer_shape.begin(), row.layer_shape.end());
    for (auto d : t.shape) t.size *= d;
    tensors_.push_back(t);
    total_ += t.size;
  }
}

}  // namespace gpuaccept::ddp
