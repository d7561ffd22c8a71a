// The fsdp-lora phase's settings: keys under `fsdp_lora.` in the YAML config (flags override
// the model, batch, step counts, recomputation and offload), each with the default used when
// the key is absent. Read and validated once, before any GPU work, so a bad value names its
// file, line and key, and a key the phase does not know (a typo) is refused, not ignored.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "common/debug_fault.h"
#include "train/checkpoint_config.h"
#include "train/learning_check.h"
#include "config/config.h"
#include "fsdp-lora/qwen_config.h"

namespace gpuaccept::fsdp {

// The learning check's basis (train/learning_check.h): issue 39's run, the frozen base random,
// lr 2e-4 with 5 warm-up steps, fell 1.33 nats in 12 steps where one step's batch moves the loss
// by about 0.01 (a trend far beyond chance); the quick profile's curve (lr 1e-3, warm-up 2, one
// H100, docs/examples/h100-quick) fell in order from step 1 to 8 (z 3.34 at 8 steps).
inline const train::LearningBasis kLearningBasis{
    1.8e-3, "fsdp-lora at Qwen2-7B's width, 20 layers, 12 steps at lr 2e-4 with 5 warm-up steps, one H200: "
            "12.65 -> 11.32 nats (issue 39)"};

struct FsdpConfig {
  // Model and batch
  std::string model = "qwen2_7b";   // fsdp_lora.model: a preset (qwen_config.h)
  int layers = 0;                   // fsdp_lora.layers: decoder layers; 0 = the preset's, else at most
                                    // the preset's (a shorter model of the same width, for quick runs)
  int seq_len = 4096;               // fsdp_lora.seq_len: tokens per sequence, a multiple of 64
                                    // (flash attention's tile)
  int micro_batch = 2;              // fsdp_lora.micro_batch: sequences per GPU per micro-step
  int grad_accum = 1;               // fsdp_lora.grad_accum: micro-steps per optimizer step
  // Training run (all GPUs): its loss curve is the learning check, its speed the figures
  int steps = 30;                   // fsdp_lora.steps: optimizer steps
  int timing_skip = 3;              // fsdp_lora.timing_skip: first steps left out of the timing
  // LoRA adapters on the frozen base
  LoraConfig lora;                  // fsdp_lora.lora.rank (64), .alpha (128), .dropout (0.05, in [0, 1))
  std::string lora_targets = "qkvo";  // fsdp_lora.lora.targets: qkvo or all (the seven projections)
  // Optimizer: AdamW over the LoRA parameters, linear warm-up, global-norm clipping
  double lr = 2e-4, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;  // fsdp_lora.lr ...
  int lr_warmup = 5;                // fsdp_lora.lr_warmup (steps)
  double grad_clip = 1.0;           // fsdp_lora.grad_clip: global-norm clipping; 0 = none
  // Memory
  bool recompute = true;            // fsdp_lora.recompute: keep only each layer's input and run the layer
                                    // forward again in backward (activation checkpointing); false: keep
                                    // what backward reads of every layer (memory_plan.cpp), no second forward
  RecomputeKeep recompute_keep = RecomputeKeep::attention_block;  // fsdp_lora.recompute_keep: what forward keeps
                                    // of each layer beside its input, with recompute (qwen_config.h):
                                    // input, attention (its output and log-sum-exp) or attention_block
  std::string offload = "none";     // fsdp_lora.offload: none, or cpu (base shards in pinned host memory,
                                    // copied to the GPU a layer ahead)
  double memory_headroom_gib = 2.0; // fsdp_lora.memory_headroom_gib: GPU memory left free when planning (GiB)
  // Communication
  std::string grad_reduce = "all_reduce";  // fsdp_lora.grad_reduce: LoRA gradients all-reduced (every rank
                                           // steps every adapter) or reduce_scatter (each bucket reduced onto
                                           // the ranks owning its parts; each rank clips by the global norm and
                                           // steps its 1/N with AdamW moments for that slice only, then the
                                           // updated slices are broadcast: fsdp_trainer.h)
  double bucket_mib = 25;           // fsdp_lora.bucket_mib: fp32 LoRA gradients per collective (MiB)
  int prefetch_layers = 1;          // fsdp_lora.prefetch_layers: layers gathered ahead of the one computing
  std::string gather = "copy_engine";  // fsdp_lora.gather: how the base's layers are gathered:
                                    // copy_engine (on one node: each rank's shard copied out of its GPU
                                    // by the copy engines, no SM; src/cuda/peer_memory.h; NCCL where that is
                                    // not possible, saying why), or nccl (ncclAllGather always). On two
                                    // H200s copy_engine scaled 96.1/95.9% against NCCL's 95.0/94.3%
  bool matmul_autotune = true;      // fsdp_lora.matmul_autotune: time cuBLASLt's candidates per shape in
                                    // step 1; false: its heuristic's first (the same choice in every run,
                                    // so two runs of the same base give the same bits)
  // Data: a Markov chain over the first data_vocab tokens, or token ids from a file
  std::uint64_t seed = 1234;        // fsdp_lora.seed: LoRA initialisation, dropout and data
  int data_vocab = 512;             // fsdp_lora.data_vocab: 2 .. the model's vocabulary
  int data_successors = 4;          // fsdp_lora.data_successors: next tokens possible after each token
                                    // (the Markov chain clamps it to data_vocab)
  std::string data_file;            // fsdp_lora.data_file: token ids prepared offline; empty = Markov task
  std::string checkpoint_dir;       // fsdp_lora.checkpoint_dir: a local Hugging Face safetensors directory of
                                    // the real model; empty = random base weights
  // Checks
  bool gradient_check = true;       // fsdp_lora.gradient_check: GPU vs float64 CPU reference, tiny model
  double grad_tolerance = 0.05;     // fsdp_lora.grad_tolerance: relative L2 error per tensor
  double loss_tolerance = 0.02;     // fsdp_lora.loss_tolerance: |loss GPU - loss CPU|, nats
  int equivalence_steps = 2;        // fsdp_lora.equivalence_steps: 1 GPU x N shards vs N GPUs; 0 = off
  double equivalence_tolerance = 0.02;  // fsdp_lora.equivalence_tolerance: max |loss difference|, nats
  train::CheckpointConfig checkpoint;  // fsdp_lora.checkpoint.*: the training checkpoint's save, restore,
                                       // resume (train/checkpoint_config.h); not checkpoint_dir above
  int scaling_steps = 12;           // fsdp_lora.scaling_steps: per scale, timing_skip's first steps
                                    // untimed (as ddp.scaling_steps); 0 = off
  // Limits
  double step_timeout_s = 600;      // fsdp_lora.step_timeout_s: a step (or collective) that takes longer is a hang
  double peak_tflops = 0;           // fsdp_lora.peak_tflops: dense bf16 peak per GPU for MFU; 0 = by GPU model
  DebugFault debug_fault;           // hidden flags only: a rank dies or hangs in the all-GPU run
  train::LearningFault learning_fault;  // hidden flag only: --debug-lr-scale (train/learning_check.h)

  // The preset with `layers` applied.
  QwenConfig model_config() const;
  bool offload_cpu() const { return offload == "cpu"; }
};

// Flags for the values an operator changes most; applied over the config by load_fsdp_config.
// 0, empty or nullopt: not given.
struct FsdpFlags {
  std::string model, offload;
  int layers = 0, seq_len = 0, micro_batch = 0, grad_accum = 0, steps = 0;
  std::optional<bool> recompute;  // --recompute / --no-recompute
  DebugFault debug_fault;
  train::LearningFault learning_fault;
};
void add_fsdp_flags(CLI::App& app, FsdpFlags& flags);

// Throws InputError naming the file, line and key of a bad value or an unknown key (or the flag
// of a bad flag value).
FsdpConfig load_fsdp_config(const Config& config, const FsdpFlags& flags);

}  // namespace gpuaccept::fsdp
