#include "results/record.h"

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_text.h"

namespace gpuaccept {

using nlohmann::json;

bool caused_by_peer(const Record& r) {
  const auto it = r.params.find(kCauseParam);
  return it != r.params.end() && it->second == kCausePeer;
}

bool blames_node(const Record& r) { return !r.node.empty() && !caused_by_peer(r); }

Record node_record(std::string node, std::string test) {
  Record r;
  r.rank = kJobLevel;
  r.node = std::move(node);
  r.test = std::move(test);
  return r;
}

Record job_record(std::string test) { return node_record("", std::move(test)); }

std::string_view to_string(Status s) {
  switch (s) {
    case Status::Pass: return "PASS";
    case Status::Skip: return "SKIP";
    case Status::Fail: return "FAIL";
    case Status::Error: return "ERROR";
  }
  return "ERROR";
}

Status parse_status(std::string_view text) {
  if (text == "PASS") return Status::Pass;
  if (text == "SKIP") return Status::Skip;
  if (text == "FAIL") return Status::Fail;
  if (text == "ERROR") return Status::Error;
  throw InputError("unknown status '" + std::string(text) + "' (expected PASS, FAIL, SKIP or ERROR)");
}

Status most_severe(Status a, Status b) { return static_cast<int>(a) >= static_cast<int>(b) ? a : b; }

bool is_failure(Status s) { return s == Status::Fail || s == Status::Error; }

bool Record::operator==(const Record& o) const {
  const bool same_value = (std::isnan(value) && std::isnan(o.value)) || value == o.value;
  return same_value && phase == o.phase && job_id == o.job_id && array_job_id == o.array_job_id &&
         array_task_id == o.array_task_id && rank == o.rank && node == o.node && gpu_index == o.gpu_index &&
         gpu_uuid == o.gpu_uuid && test == o.test && metric == o.metric && unit == o.unit &&
         params == o.params && status == o.status && message == o.message;
}

std::string encode_params(const Params& p) { return json_text(json(p)); }

Params decode_params(std::string_view json_text) {
  if (json_text.empty()) return {};
  Params p;
  const json parsed = json::parse(json_text);  // items() must not outlive the parsed value
  for (const auto& [k, v] : parsed.items()) p[k] = v.is_string() ? v.get<std::string>() : gpuaccept::json_text(v);
  return p;
}

std::string encode_records(const std::vector<Record>& records) {
  json out = json::array();
  for (const auto& r : records) {
    out.push_back({{"phase", r.phase}, {"job_id", r.job_id}, {"array_job_id", r.array_job_id},
                   {"array_task_id", r.array_task_id}, {"rank", r.rank}, {"node", r.node},
                   {"gpu_index", r.gpu_index}, {"gpu_uuid", r.gpu_uuid}, {"test", r.test},
                   {"metric", r.metric}, {"value", r.has_value() ? json(r.value) : json(nullptr)},
                   {"unit", r.unit}, {"params", r.params}, {"status", to_string(r.status)},
                   {"message", r.message}});
  }
  return json_text(out);
}

std::vector<Record> decode_records(std::string_view json_text) {
  std::vector<Record> out;
  for (const auto& j : json::parse(json_text)) {
    Record r;
    r.phase = j.at("phase");
    r.job_id = j.at("job_id");
    r.array_job_id = j.at("array_job_id");
    r.array_task_id = j.at("array_task_id");
    r.rank = j.at("rank");
    r.node = j.at("node");
    r.gpu_index = j.at("gpu_index");
    r.gpu_uuid = j.at("gpu_uuid");
    r.test = j.at("test");
    r.metric = j.at("metric");
    if (!j.at("value").is_null()) r.value = j.at("value");
    r.unit = j.at("unit");
    r.params = j.at("params").get<Params>();
    r.status = parse_status(j.at("status").get<std::string>());
    r.message = j.at("message");
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace gpuaccept
