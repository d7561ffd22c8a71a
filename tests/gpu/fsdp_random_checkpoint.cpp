// fsdp-random-checkpoint DIR MODEL LAYERS SEED [FILES]: writes the fsdp-lora phase's random
// frozen base (base_init.h: MODEL's shape with LAYERS decoder layers, SEED) as a Hugging Face
// checkpoint directory, FILES safetensors shards (default 2) and their index. A run with
// fsdp_lora.checkpoint_dir pointing there must train bit for bit as the run from the seed
// (tests/gpu/fsdp_base_paths.sh): the real-checkpoint path checked without downloading a
// model. CPU only.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "fsdp-lora/base_checkpoint.h"
#include "fsdp-lora/qwen_config.h"

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: fsdp-random-checkpoint DIR MODEL LAYERS SEED [FILES]\n");
    return 2;
  }
  try {
    gpuaccept::fsdp::QwenConfig model = gpuaccept::fsdp::qwen_preset_by_name(argv[2]);
    const int layers = std::atoi(argv[3]);
    if (layers < 1 || layers > model.layers) {
      std::fprintf(stderr, "fsdp-random-checkpoint: LAYERS %s: 1 to %d\n", argv[3], model.layers);
      return 2;
    }
    model.layers = layers;
    const int files = argc > 5 ? std::atoi(argv[5]) : 2;
    gpuaccept::fsdp::write_random_base_checkpoint(argv[1], model, std::strtoull(argv[4], nullptr, 10), files);
    std::printf("fsdp-random-checkpoint: %s: %s with %d layers, seed %s\n", argv[1], argv[2], layers, argv[4]);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fsdp-random-checkpoint: %s\n", e.what());
    return 1;
  }
}
