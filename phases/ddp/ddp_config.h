// The ddp phase's settings: keys under `ddp.` in the YAML config (flags override the
// model, batch and step counts), each with the default used when the key is absent.
// Read and validated once, before any GPU work, so a typo names its file, line and key.
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "common/debug_fault.h"
#include "train/checkpoint_config.h"
#include "train/learning_check.h"
#include "config/config.h"
#include "ddp/gpt_config.h"

namespace gpuaccept::ddp {

// The learning check's basis (train/learning_check.h): the default schedule's loss curve on one
// H100 (quick profile, docs/examples/h100-quick: 10.96 at step 1, a spike 9.30 -> 11.95 at step 7,
// 1.30 at step 60) is falling beyond chance from step 12 on (z 3.36, learning-rate sum 3.9e-3);
// 15 steps (5.7e-3, z 4.06) leave room for a spike elsewhere at another learning rate.
inline const train::LearningBasis kLearningBasis{
    5.7e-3, "ddp's GPT-2 124M, 15 steps of lr 6e-4 with 10 warm-up steps on one H100, trend z 4.06 (2026-11, "
            "docs/examples/h100-quick)"};

struct DdpConfig {
  // Model and batch
  std::string model = "gpt2_124m";  // ddp.model: a preset (gpt_config.h)
  int micro_batch = 16;             // ddp.micro_batch: sequences per GPU per micro-step
  int seq_len = 1024;               // ddp.seq_len
  int grad_accum = 1;               // ddp.grad_accum: micro-steps per optimizer step
  // Training run (all GPUs): its loss curve is the learning check, its speed the figures
  int steps = 60;                   // ddp.steps
  int timing_skip = 5;              // ddp.timing_skip: first steps left out of the timing
  // Optimizer: AdamW (decay on matrices and embeddings only), linear warm-up, clipping
  double lr = 6e-4, beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weight_decay = 0.1;  // ddp.lr ...
  int lr_warmup = 10;               // ddp.lr_warmup (steps)
  double grad_clip = 1.0;           // ddp.grad_clip: global-norm clipping; 0 = none
  bool flash_attention = true;      // ddp.flash_attention: fused attention where the shape allows
                                    // (heads of 64, seq_len a multiple of 64); false: GEMMs + softmax
  bool matmul_autotune = true;      // ddp.matmul_autotune: time cuBLASLt's candidates per shape in step 1
  bool cuda_graph = true;           // ddp.cuda_graph: in a job of one GPU, each micro-batch's forward and
                                    // backward replayed from CUDA graphs after a run's first step
                                    // (gpu/model_graphs.h; +1.0% on an H200, docs/performance.md)
  // Data parallelism
  double bucket_mib = 25;           // ddp.bucket_mib: fp32 gradients per all-reduce bucket
  std::string grad_reduce = "bf16"; // ddp.grad_reduce: bf16 (half the bytes, as PyTorch's
                                    // bf16_compress_hook; gpu/gradient_sync.h) or fp32 (as PyTorch
                                    // DDP's default). bf16 by default: on 4 H200s it kept the
                                    // backward 0.6 ms shorter beside NCCL, scaling 95.1-95.8% vs
                                    // 93.3-94.2% (docs/performance-history.md); equivalence within 1.5e-3
  std::string all_reduce = "nccl";  // ddp.all_reduce: how the buckets' bytes cross the GPUs: nccl
                                    // (NCCL's kernels) or copy_engine (one node, bf16: copies by
                                    // the copy engines, no NCCL kernel beside the backward pass
                                    // but one-float handshakes; gpu/gradient_sync.h)
  int comm_sms = 0;                 // ddp.comm_sms: SMs left to NCCL while the backward pass runs beside
                                    // the all-reduce: the communicators' CTA limit, and the matmuls
                                    // meanwhile are planned for the other SMs, at least half of them
                                    // (src/train/matmul.h); 0 = off
  // Data: a Markov chain over the first data_vocab tokens (markov_data.h), or a file
  int data_vocab = 512;             // ddp.data_vocab
  int data_successors = 4;          // ddp.data_successors
  std::uint64_t seed = 1234;        // ddp.seed: initial weights and data
  std::string data_file;            // ddp.data_file: llm.c token file (.bin, uint16 ids)
  // Checks
  bool gradient_check = true;       // ddp.gradient_check: GPU vs float64 CPU reference, tiny model
  double grad_tolerance = 0.05;     // ddp.grad_tolerance: relative L2 error per tensor
  double loss_tolerance = 0.02;     // ddp.loss_tolerance: |loss GPU - loss CPU|, nats
  int equivalence_steps = 4;        // ddp.equivalence_steps: 1 GPU x N shards vs N GPUs; 0 = off
  double equivalence_tolerance = 0.02;  // ddp.equivalence_tolerance: max |loss difference|, nats
  int scaling_steps = 15;           // ddp.scaling_steps: per scale (1 GPU, one node); 0 = off
  train::CheckpointConfig checkpoint;  // ddp.checkpoint.*: save, restore, resume (train/checkpoint_config.h)
  // Limits
  double step_timeout_s = 300;      // ddp.step_timeout_s: a step (or collective) that takes longer is a hang
  double peak_tflops = 0;           // ddp.peak_tflops: dense bf16 peak per GPU for MFU; 0 = by GPU model
  DebugFault debug_fault;           // hidden flags only: a rank dies or hangs in the all-GPU run
  train::LearningFault learning_fault;  // hidden flag only: --debug-lr-scale (train/learning_check.h)
  bool debug_graph_refusal = false; // hidden flag only: --debug-graph-refusal (tests/gpu/ddp_graph_fallback.sh):
                                    // each CUDA graph capture synchronises its stream, which no capture
                                    // allows, so the passes fall back to running eagerly
};

// Flags for the values an operator changes most; applied over the config by load_ddp_config.
struct DdpFlags {
  std::string model;
  int micro_batch = 0, seq_len = 0, grad_accum = 0, steps = 0;
  DebugFault debug_fault;
  train::LearningFault learning_fault;
  bool debug_graph_refusal = false;
};
void add_ddp_flags(CLI::App& app, DdpFlags& flags);

// Throws InputError naming the file, line and key of a bad value.
DdpConfig load_ddp_config(const Config& config, const DdpFlags& flags);

}  // namespace gpuaccept::ddp
