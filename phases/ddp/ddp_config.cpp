#include "ddp/ddp_config.h"

#include <fmt/format.h>

namespace gpuaccept::ddp {

void add_ddp_flags(CLI::App& app, DdpFlags& f) {
  app.add_option("--model", f.model, "model preset (ddp.model): " + fmt::format("{}", fmt::join(preset_names(), ", ")));
  app.add_option("--micro-batch", f.micro_batch, "sequences per GPU per micro-step (ddp.micro_batch)");
  app.add_option("--seq-len", f.seq_len, "sequence length (ddp.seq_len)");
  app.add_option("--grad-accum", f.grad_accum, "micro-steps per optimizer step (ddp.grad_accum)");
  app.add_option("--steps", f.steps, "optimizer steps of the training run (ddp.steps)");
  add_debug_fault_flags(app, f.debug_fault);  // tests/gpu/ranks_on_one_gpu.sh
  app.add_option("--debug-lr-scale", f.learning_fault.lr_scale)->group("");  // tests/gpu/learning_grid.sh
  app.add_flag("--debug-graph-refusal", f.debug_graph_refusal)->group("");  // tests/gpu/ddp_graph_fallback.sh
}

DdpConfig load_ddp_config(const Config& c, const DdpFlags& f) {
  // Every key read below: a typo (`ddp.stpes`) is refused, not left to the default.
  c.refuse_unknown_keys("ddp", {
      "all_reduce", "bucket_mib", "checkpoint", "comm_sms", "cuda_graph", "data_file", "data_successors", "data_vocab", "eps", "equivalence_steps",
      "equivalence_tolerance", "flash_attention", "grad_accum", "grad_clip", "grad_reduce", "grad_tolerance",
      "gradient_check", "loss_tolerance", "lr", "lr_warmup", "matmul_autotune",
      "micro_batch", "model", "peak_tflops", "scaling_steps", "seed", "seq_len", "step_timeout_s", "steps",
      "timing_skip", "weight_decay"});
  DdpConfig d;
  d.model = c.get("ddp.model", d.model);
  if (!f.model.empty()) d.model = f.model;
  try {
    (void)preset_by_name(d.model);
  } catch (const std::invalid_argument& e) {
    throw c.error_at(c.find("ddp.model"), "ddp.model", e.what());
  }
  d.micro_batch = f.micro_batch > 0 ? f.micro_batch : c.get_positive("ddp.micro_batch", d.micro_batch);
  d.seq_len = f.seq_len > 0 ? f.seq_len : c.get_positive("ddp.seq_len", d.seq_len);
  if (d.seq_len % 8 != 0 || d.seq_len > preset_by_name(d.model).max_seq)
    throw c.error_at(c.find("ddp.seq_len"), "ddp.seq_len",
                     fmt::format("{} must be a multiple of 8 and at most {}", d.seq_len, preset_by_name(d.model).max_seq));
  d.grad_accum = f.grad_accum > 0 ? f.grad_accum : c.get_positive("ddp.grad_accum", d.grad_accum);
  d.steps = f.steps > 0 ? f.steps : c.get_positive("ddp.steps", d.steps);
  d.timing_skip = c.get_non_negative("ddp.timing_skip", d.timing_skip);
  if (d.timing_skip >= d.steps) d.timing_skip = d.steps / 2;
  d.lr = c.get_positive("ddp.lr", d.lr);
  d.beta1 = c.get_non_negative("ddp.beta1", d.beta1);
  d.beta2 = c.get_non_negative("ddp.beta2", d.beta2);
  d.eps = c.get_positive("ddp.eps", d.eps);
  d.weight_decay = c.get_non_negative("ddp.weight_decay", d.weight_decay);
  d.lr_warmup = c.get_non_negative("ddp.lr_warmup", d.lr_warmup);
  d.grad_clip = c.get_non_negative("ddp.grad_clip", d.grad_clip);
  d.flash_attention = c.get("ddp.flash_attention", d.flash_attention);
  d.matmul_autotune = c.get("ddp.matmul_autotune", d.matmul_autotune);
  d.cuda_graph = c.get("ddp.cuda_graph", d.cuda_graph);
  d.bucket_mib = c.get_non_negative("ddp.bucket_mib", d.bucket_mib);
  d.grad_reduce = c.get("ddp.grad_reduce", d.grad_reduce);
  if (d.grad_reduce != "fp32" && d.grad_reduce != "bf16")
    throw c.error_at(c.find("ddp.grad_reduce"), "ddp.grad_reduce", fmt::format("'{}': fp32 or bf16", d.grad_reduce));
  d.all_reduce = c.get("ddp.all_reduce", d.all_reduce);
  if (d.all_reduce != "nccl" && d.all_reduce != "copy_engine")
    throw c.error_at(c.find("ddp.all_reduce"), "ddp.all_reduce", fmt::format("'{}': nccl or copy_engine", d.all_reduce));
  d.comm_sms = c.get_non_negative("ddp.comm_sms", d.comm_sms);
  if (d.comm_sms > 64)
    throw c.error_at(c.find("ddp.comm_sms"), "ddp.comm_sms", fmt::format("{} SMs: at most 64 (NCCL's CTA limit)", d.comm_sms));
  d.data_vocab = c.get_positive("ddp.data_vocab", d.data_vocab);
  if (d.data_vocab < 2 || d.data_vocab > preset_by_name(d.model).vocab)
    throw c.error_at(c.find("ddp.data_vocab"), "ddp.data_vocab",
                     fmt::format("{} must be between 2 and the model's vocabulary", d.data_vocab));
  d.data_successors = c.get_positive("ddp.data_successors", d.data_successors);
  d.seed = c.get("ddp.seed", d.seed);
  d.data_file = c.get("ddp.data_file", d.data_file);
  d.gradient_check = c.get("ddp.gradient_check", d.gradient_check);
  d.grad_tolerance = c.get_positive("ddp.grad_tolerance", d.grad_tolerance);
  d.loss_tolerance = c.get_positive("ddp.loss_tolerance", d.loss_tolerance);
  d.equivalence_steps = c.get_non_negative("ddp.equivalence_steps", d.equivalence_steps);
  d.equivalence_tolerance = c.get_positive("ddp.equivalence_tolerance", d.equivalence_tolerance);
  d.scaling_steps = c.get_non_negative("ddp.scaling_steps", d.scaling_steps);
  d.step_timeout_s = c.get_positive("ddp.step_timeout_s", d.step_timeout_s);
  d.peak_tflops = c.get_non_negative("ddp.peak_tflops", d.peak_tflops);
  d.checkpoint = train::load_checkpoint_config(c, "ddp", d.steps, false);
  d.debug_fault = f.debug_fault;
  d.learning_fault = f.learning_fault;
  d.debug_graph_refusal = f.debug_graph_refusal;
  return d;
}

}  // namespace gpuaccept::ddp
