// Fuzz target 3 (issue 18): the readers of operator-written YAML. The input is one file's
// text, given to both
//  - the phase config: Config::parse, refuse_unknown_sections, then every phase's own
//    parser as the phases call it (discover's keys through refuse_unknown_keys, smoke's
//    load_smoke_config, nccl-scaling's resolve_options with no flags, ddp's load_ddp_config,
//    fsdp-lora's load_fsdp_config with no flags);
//  - a threshold file: ThresholdSet::parse as configs/thresholds/fuzz.yaml (so `extends:`
//    reaches the real generic.yaml and the GPU files beside it).
// Every reader must accept the text or throw InputError (it names file:line and key). A
// finding: any other exception escaping (YAML::Exception, std::out_of_range, bad_alloc...),
// a crash, a hang, or a sanitizer report (UBSan: a huge number cast to int, an overflow).
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <string>

#include "common/error.h"
#include "config/config.h"
#include "ddp/ddp_config.h"
#include "fsdp-lora/fsdp_config.h"
#include "fuzz_util.h"
#include "nccl-scaling/options.h"
#include "smoke/smoke_config.h"
#include "thresholds/threshold_set.h"

namespace {

void expect_input_error(const char* reader, const std::function<void()>& read) {
  try {
    read();
  } catch (const gpuaccept::InputError&) {
  } catch (const std::exception& e) {
    fuzz::finding(std::string(reader) + " threw other than InputError: " + e.what());
  } catch (...) {
    fuzz::finding(std::string(reader) + " threw something that is not a std::exception");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  expect_input_error("the phase config", [&] {
    const gpuaccept::Config c = gpuaccept::Config::parse(text, "fuzz.yaml");
    c.refuse_unknown_sections();
    expect_input_error("discover's keys", [&] {
      c.refuse_unknown_keys("discover", {"expected_gpus_per_node"});  // as phases/discover/main.cpp
      (void)c.get_optional<int>("discover.expected_gpus_per_node");
    });
    expect_input_error("load_smoke_config", [&] { (void)gpuaccept::smoke::load_smoke_config(c); });
    expect_input_error("nccl resolve_options", [&] {
      (void)gpuaccept::nccl_scaling::resolve_options(gpuaccept::nccl_scaling::CliValues{}, c);
    });
    expect_input_error("load_ddp_config", [&] { (void)gpuaccept::ddp::load_ddp_config(c, gpuaccept::ddp::DdpFlags{}); });
    expect_input_error("load_fsdp_config", [&] { (void)gpuaccept::fsdp::load_fsdp_config(c, gpuaccept::fsdp::FsdpFlags{}); });
  });
  expect_input_error("ThresholdSet::parse", [&] {
    (void)gpuaccept::ThresholdSet::parse(text, FUZZ_SOURCE_DIR "/configs/thresholds/fuzz.yaml");
  });
  return 0;
}
