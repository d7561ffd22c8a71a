#include "ddp/ddp_config.h"

#include <fmt/format.h>

namespace gpuaccept::ddp {

namespace {

template <typename T>
T positive(const Config& c, const char* key, T fallback) {
  const T v = c.get<T>(key, fallback);
  if (!(v > T{})) throw c.error_at(c.find(key), key, fmt::format("must be positive, got {}", v));
  return v;
}

template <typename T>
T non_negative(const Config& c, const char* key, T fallback) {
  const T v = c.get<T>(key, fallback);
  if (v < T{}) throw c.error_at(c.find(key), key, fmt::format("must not be negative, got {}", v));
  return v;
}

}  // namespace

void add_ddp_flags(CLI::App& app, DdpFlags& f) {
  app.add_option("--model", f.model, "model preset (ddp.model): " + fmt::format("{}", fmt::join(preset_names(), ", ")));
  app.add_option("--micro-batch", f.micro_batch, "sequences per GPU per micro-step (ddp.micro_batch)");
  app.add_option("--seq-len", f.seq_len, "sequence length (ddp.seq_len)");
  app.add_option("--grad-accum", f.grad_accum, "micro-steps per optimizer step (ddp.grad_accum)");
  app.add_option("--steps", f.steps, "optimizer steps of the training run (ddp.steps)");
}

DdpConfig load_ddp_config(const Config& c, const DdpFlags& f) {
  DdpConfig d;
  d.model = c.get("ddp.model", d.model);
  if (!f.model.empty()) d.model = f.model;
  try {
    (void)preset_by_name(d.model);
  } catch (const std::invalid_argument& e) {
    throw c.error_at(c.find("ddp.model"), "ddp.model", e.what());
  }
  d.micro_batch = f.micro_batch > 0 ? f.micro_batch : positive(c, "ddp.micro_batch", d.micro_batch);
  d.seq_len = f.seq_len > 0 ? f.seq_len : positive(c, "ddp.seq_len", d.seq_len);
  if (d.seq_len % 8 != 0 || d.seq_len > preset_by_name(d.model).max_seq)
    throw c.error_at(c.find("ddp.seq_len"), "ddp.seq_len",
                     fmt::format("{} must be a multiple of 8 and at most {}", d.seq_len, preset_by_name(d.model).max_seq));
  d.grad_accum = f.grad_accum > 0 ? f.grad_accum : positive(c, "ddp.grad_accum", d.grad_accum);
  d.steps = f.steps > 0 ? f.steps : positive(c, "ddp.steps", d.steps);
  d.timing_skip = non_negative(c, "ddp.timing_skip", d.timing_skip);
  if (d.timing_skip >= d.steps) d.timing_skip = d.steps / 2;
  d.learn_fraction = positive(c, "ddp.learn_fraction", d.learn_fraction);
  d.lr = positive(c, "ddp.lr", d.lr);
  d.beta1 = non_negative(c, "ddp.beta1", d.beta1);
  d.beta2 = non_negative(c, "ddp.beta2", d.beta2);
  d.eps = positive(c, "ddp.eps", d.eps);
  d.weight_decay = non_negative(c, "ddp.weight_decay", d.weight_decay);
  d.lr_warmup = non_negative(c, "ddp.lr_warmup", d.lr_warmup);
  d.grad_clip = non_negative(c, "ddp.grad_clip", d.grad_clip);
  d.flash_attention = c.get("ddp.flash_attention", d.flash_attention);
  d.matmul_autotune = c.get("ddp.matmul_autotune", d.matmul_autotune);
  d.bucket_mib = non_negative(c, "ddp.bucket_mib", d.bucket_mib);
  d.data_vocab = positive(c, "ddp.data_vocab", d.data_vocab);
  if (d.data_vocab < 2 || d.data_vocab > preset_by_name(d.model).vocab)
    throw c.error_at(c.find("ddp.data_vocab"), "ddp.data_vocab",
                     fmt::format("{} must be between 2 and the model's vocabulary", d.data_vocab));
  d.data_successors = positive(c, "ddp.data_successors", d.data_successors);
  d.seed = c.get("ddp.seed", d.seed);
  d.data_file = c.get("ddp.data_file", d.data_file);
  d.gradient_check = c.get("ddp.gradient_check", d.gradient_check);
  d.grad_tolerance = positive(c, "ddp.grad_tolerance", d.grad_tolerance);
  d.loss_tolerance = positive(c, "ddp.loss_tolerance", d.loss_tolerance);
  d.equivalence_steps = non_negative(c, "ddp.equivalence_steps", d.equivalence_steps);
  d.equivalence_tolerance = positive(c, "ddp.equivalence_tolerance", d.equivalence_tolerance);
  d.scaling_steps = non_negative(c, "ddp.scaling_steps", d.scaling_steps);
  d.step_timeout_s = positive(c, "ddp.step_timeout_s", d.step_timeout_s);
  d.peak_tflops = non_negative(c, "ddp.peak_tflops", d.peak_tflops);
  return d;
}

}  // namespace gpuaccept::ddp
