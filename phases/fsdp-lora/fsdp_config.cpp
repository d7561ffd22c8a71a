#include "fsdp-lora/fsdp_config.h"

#include <algorithm>
#include <stdexcept>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace gpuaccept::fsdp {

namespace {

// An operator's typo (`fsdp_lora.recompte: false`) must not silently leave the default in force:
// every key the phase reads under fsdp_lora (load_fsdp_config below), and under fsdp_lora.lora.
void refuse_unknown_keys(const Config& c) {
  c.refuse_unknown_keys("fsdp_lora",
                        {"model",          "layers",          "seq_len",         "micro_batch",       "grad_accum",
                         "steps",          "timing_skip",     "lora",              "lr",
                         "beta1",          "beta2",           "eps",             "weight_decay",      "lr_warmup",
                         "grad_clip",      "recompute",       "recompute_keep", "offload",         "memory_headroom_gib", "grad_reduce",
                         "bucket_mib",     "prefetch_layers", "gather", "matmul_autotune", "seed",            "data_vocab",        "data_successors",
                         "data_file",      "checkpoint_dir",  "checkpoint",  "gradient_check",  "grad_tolerance",    "loss_tolerance",
                         "equivalence_steps", "equivalence_tolerance", "scaling_steps", "step_timeout_s", "peak_tflops"});
  c.refuse_unknown_keys("fsdp_lora.lora", {"rank", "alpha", "dropout", "targets"});
}

// A bad value is named by where it came from: the flag, or the file, line and key.
InputError refusal(const Config& c, std::string_view key, std::string_view flag, bool from_flag, const std::string& what) {
  if (from_flag) return InputError(fmt::format("flag {}: {}", flag, what));
  return c.error_at(c.find(key), key, what);
}

// A positive count from its flag when given (0 = not given), else from the file.
int positive_from(const Config& c, std::string_view key, int flag_value, std::string_view flag, int fallback) {
  if (flag_value < 0) throw refusal(c, key, flag, true, fmt::format("must be positive, got {}", flag_value));
  if (flag_value > 0) return flag_value;
  return c.get_positive(key, fallback);
}

}  // namespace

QwenConfig FsdpConfig::model_config() const {
  QwenConfig c = qwen_preset_by_name(model);
  if (layers > 0) c.layers = layers;
  return c;
}

void add_fsdp_flags(CLI::App& app, FsdpFlags& f) {
  app.add_option("--model", f.model,
                 fmt::format("model preset (fsdp_lora.model): {}", fmt::join(qwen_preset_names(), ", ")));
  app.add_option("--layers", f.layers, "decoder layers, at most the preset's (fsdp_lora.layers)");
  app.add_option("--seq-len", f.seq_len, "sequence length, a multiple of 64 (fsdp_lora.seq_len)");
  app.add_option("--micro-batch", f.micro_batch, "sequences per GPU per micro-step (fsdp_lora.micro_batch)");
  app.add_option("--grad-accum", f.grad_accum, "micro-steps per optimizer step (fsdp_lora.grad_accum)");
  app.add_option("--steps", f.steps, "optimizer steps of the training run (fsdp_lora.steps)");
  // CLI11 passes the flag's count, negative for the negated form.
  app.add_flag_function(
      "--recompute,!--no-recompute", [&f](std::int64_t count) { f.recompute = count > 0; },
      "recompute each layer in backward instead of storing its activations (fsdp_lora.recompute)");
  app.add_option("--offload", f.offload, "base shards on the GPU (none) or in pinned host memory (cpu) (fsdp_lora.offload)");
  add_debug_fault_flags(app, f.debug_fault);
  app.add_option("--debug-lr-scale", f.learning_fault.lr_scale)->group("");  // tests/gpu/learning_grid.sh
}

FsdpConfig load_fsdp_config(const Config& c, const FsdpFlags& f) {
  refuse_unknown_keys(c);
  FsdpConfig d;

  d.model = f.model.empty() ? c.get("fsdp_lora.model", d.model) : f.model;
  QwenConfig preset{};
  try {
    preset = qwen_preset_by_name(d.model);
  } catch (const std::invalid_argument& e) {
    throw refusal(c, "fsdp_lora.model", "--model", !f.model.empty(), e.what());
  }
  if (f.layers < 0) throw refusal(c, "fsdp_lora.layers", "--layers", true, fmt::format("must be positive, got {}", f.layers));
  d.layers = f.layers > 0 ? f.layers : c.get_non_negative("fsdp_lora.layers", d.layers);
  if (d.layers > preset.layers)
    throw refusal(c, "fsdp_lora.layers", "--layers", f.layers > 0,
                  fmt::format("{} layers: {} has {}; 0 means all of them", d.layers, d.model, preset.layers));

  d.seq_len = positive_from(c, "fsdp_lora.seq_len", f.seq_len, "--seq-len", d.seq_len);
  // Flash attention works in tiles of 64 tokens. No upper bound from the preset: RoPE needs no
  // table, and the synthetic task has no trained context length to respect.
  if (d.seq_len % 64 != 0)
    throw refusal(c, "fsdp_lora.seq_len", "--seq-len", f.seq_len > 0,
                  fmt::format("{} must be a multiple of 64 (flash attention's tile)", d.seq_len));
  d.micro_batch = positive_from(c, "fsdp_lora.micro_batch", f.micro_batch, "--micro-batch", d.micro_batch);
  d.grad_accum = positive_from(c, "fsdp_lora.grad_accum", f.grad_accum, "--grad-accum", d.grad_accum);
  d.steps = positive_from(c, "fsdp_lora.steps", f.steps, "--steps", d.steps);
  d.timing_skip = c.get_non_negative("fsdp_lora.timing_skip", d.timing_skip);
  if (d.timing_skip >= d.steps) d.timing_skip = d.steps / 2;  // a short run still times its later half

  d.lora.rank = c.get_positive("fsdp_lora.lora.rank", d.lora.rank);
  d.lora.alpha = c.get_positive("fsdp_lora.lora.alpha", d.lora.alpha);
  d.lora.dropout = c.get_non_negative("fsdp_lora.lora.dropout", d.lora.dropout);
  if (d.lora.dropout >= 1)
    throw c.error_at(c.find("fsdp_lora.lora.dropout"), "fsdp_lora.lora.dropout",
                     fmt::format("{}: a probability in [0, 1)", d.lora.dropout));
  d.lora_targets = c.get("fsdp_lora.lora.targets", d.lora_targets);
  try {
    d.lora.targets = lora_targets_by_name(d.lora_targets);
  } catch (const std::invalid_argument& e) {
    throw c.error_at(c.find("fsdp_lora.lora.targets"), "fsdp_lora.lora.targets", e.what());
  }

  d.lr = c.get_positive("fsdp_lora.lr", d.lr);
  // AdamW's bias correction divides by 1 - beta^t: a beta of 1 or more divides by zero or flips sign.
  for (auto [key, beta] : {std::pair{"fsdp_lora.beta1", &d.beta1}, std::pair{"fsdp_lora.beta2", &d.beta2}}) {
    *beta = c.get_non_negative(key, *beta);
    if (*beta >= 1) throw c.error_at(c.find(key), key, fmt::format("{}: must be in [0, 1)", *beta));
  }
  d.eps = c.get_positive("fsdp_lora.eps", d.eps);
  d.weight_decay = c.get_non_negative("fsdp_lora.weight_decay", d.weight_decay);
  d.lr_warmup = c.get_non_negative("fsdp_lora.lr_warmup", d.lr_warmup);
  d.grad_clip = c.get_non_negative("fsdp_lora.grad_clip", d.grad_clip);

  d.recompute = f.recompute ? *f.recompute : c.get("fsdp_lora.recompute", d.recompute);
  {
    const std::string keep = c.get("fsdp_lora.recompute_keep", std::string(recompute_keep_name(d.recompute_keep)));
    try {
      d.recompute_keep = recompute_keep_by_name(keep);
    } catch (const std::invalid_argument& e) {
      throw c.error_at(c.find("fsdp_lora.recompute_keep"), "fsdp_lora.recompute_keep", e.what());
    }
  }
  d.offload = f.offload.empty() ? c.get("fsdp_lora.offload", d.offload) : f.offload;
  if (d.offload != "none" && d.offload != "cpu")
    throw refusal(c, "fsdp_lora.offload", "--offload", !f.offload.empty(), fmt::format("'{}': none or cpu", d.offload));
  d.memory_headroom_gib = c.get_non_negative("fsdp_lora.memory_headroom_gib", d.memory_headroom_gib);

  d.grad_reduce = c.get("fsdp_lora.grad_reduce", d.grad_reduce);
  if (d.grad_reduce != "all_reduce" && d.grad_reduce != "reduce_scatter")
    throw c.error_at(c.find("fsdp_lora.grad_reduce"), "fsdp_lora.grad_reduce",
                     fmt::format("'{}': all_reduce or reduce_scatter", d.grad_reduce));
  d.bucket_mib = c.get_positive("fsdp_lora.bucket_mib", d.bucket_mib);
  d.prefetch_layers = c.get_positive("fsdp_lora.prefetch_layers", d.prefetch_layers);
  d.gather = c.get("fsdp_lora.gather", d.gather);
  if (d.gather != "nccl" && d.gather != "copy_engine")
    throw c.error_at(c.find("fsdp_lora.gather"), "fsdp_lora.gather", fmt::format("'{}': nccl or copy_engine", d.gather));

  d.seed = c.get("fsdp_lora.seed", d.seed);
  d.data_vocab = c.get_positive("fsdp_lora.data_vocab", d.data_vocab);
  if (d.data_vocab < 2 || d.data_vocab > preset.vocab)
    throw c.error_at(c.find("fsdp_lora.data_vocab"), "fsdp_lora.data_vocab",
                     fmt::format("{} must be between 2 and {}'s vocabulary, {}", d.data_vocab, d.model, preset.vocab));
  d.data_successors = c.get_positive("fsdp_lora.data_successors", d.data_successors);
  d.data_file = c.get("fsdp_lora.data_file", d.data_file);
  d.checkpoint_dir = c.get("fsdp_lora.checkpoint_dir", d.checkpoint_dir);
  d.matmul_autotune = c.get("fsdp_lora.matmul_autotune", d.matmul_autotune);

  d.gradient_check = c.get("fsdp_lora.gradient_check", d.gradient_check);
  d.grad_tolerance = c.get_positive("fsdp_lora.grad_tolerance", d.grad_tolerance);
  d.loss_tolerance = c.get_positive("fsdp_lora.loss_tolerance", d.loss_tolerance);
  d.equivalence_steps = c.get_non_negative("fsdp_lora.equivalence_steps", d.equivalence_steps);
  d.equivalence_tolerance = c.get_positive("fsdp_lora.equivalence_tolerance", d.equivalence_tolerance);
  d.scaling_steps = c.get_non_negative("fsdp_lora.scaling_steps", d.scaling_steps);

  d.step_timeout_s = c.get_positive("fsdp_lora.step_timeout_s", d.step_timeout_s);
  d.peak_tflops = c.get_non_negative("fsdp_lora.peak_tflops", d.peak_tflops);
  d.checkpoint = train::load_checkpoint_config(c, "fsdp_lora", d.steps, /*allow_include_base=*/true);
  d.debug_fault = f.debug_fault;
  d.learning_fault = f.learning_fault;
  return d;
}

}  // namespace gpuaccept::fsdp
