#include "train/checkpoint_config.h"

#include <algorithm>

#include <fmt/format.h>

namespace gpuaccept::train {

CheckpointConfig load_checkpoint_config(const Config& c, std::string_view section, int steps, bool allow_include_base) {
  const std::string s = fmt::format("{}.checkpoint", section);
  if (allow_include_base)
    c.refuse_unknown_keys(s, {"baseline", "dir", "enabled", "include_base", "resume_steps", "step"});
  else
    c.refuse_unknown_keys(s, {"baseline", "dir", "enabled", "resume_steps", "step"});
  const auto key = [&](const char* k) { return fmt::format("{}.{}", s, k); };
  CheckpointConfig out;
  out.enabled = c.get(key("enabled"), out.enabled);
  out.step = c.get_non_negative(key("step"), out.step);
  out.resume_steps = c.get_positive(key("resume_steps"), out.resume_steps);
  out.dir = c.get(key("dir"), out.dir);
  out.baseline = c.get(key("baseline"), out.baseline);
  out.include_base = c.get(key("include_base"), out.include_base);
  if (!out.enabled) return out;
  const bool chosen = out.step != 0 || c.get_optional<int>(key("resume_steps")).has_value();
  if (!chosen) {
    // Unset: half the run, and as many compared steps as fit (a run of one step has none:
    // the phase says SKIP and why).
    out.step = steps / 2;
    out.resume_steps = std::min(out.resume_steps, steps - out.step);
    if (out.step < 1) out.enabled = false;
    return out;
  }
  if (out.step == 0) out.step = steps / 2;
  if (out.step < 1 || out.step >= steps)
    throw c.error_at(c.find(key("step")), key("step"),
                     fmt::format("{}: the save must come after a step of the main run and before its last ({} steps)",
                                 out.step, steps));
  if (out.step + out.resume_steps > steps)
    throw c.error_at(c.find(key("resume_steps")), key("resume_steps"),
                     fmt::format("{} steps after the save at step {} go past the main run's {} steps", out.resume_steps,
                                 out.step, steps));
  return out;
}

}  // namespace gpuaccept::train
