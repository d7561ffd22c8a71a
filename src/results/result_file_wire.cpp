// Layout: the tag, then
//   attributes: count, then (key, value) strings
//   records:    count, then per record its fields in Record's order; params as a count
//               and (key, value) strings; status as one byte
//   documents:  count, then (name, count, strings)
// counts are uint64, strings a uint64 length and the bytes, numbers their memory image.
#include "results/result_file_wire.h"

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "common/error.h"
#include "results/utf8.h"

namespace gpuaccept {

namespace {

constexpr std::string_view kTag = "gpuaccept-wire-1\n";

class Writer {
 public:
  template <typename T>
  void number(T v) {
    static_assert(std::is_arithmetic_v<T>);
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void count(std::size_t n) { number<std::uint64_t>(n); }
  void text(std::string_view s) {
    const std::size_t at = out_.size();
    count(0);  // the length after the repair, filled in below
    const std::uint64_t n = append_valid_utf8(out_, s);
    std::memcpy(out_.data() + at, &n, sizeof n);
  }
  void raw(std::string_view s) { out_ += s; }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  template <typename T>
  T number() {
    T v;
    std::memcpy(&v, take(sizeof v).data(), sizeof v);
    return v;
  }
  // A count of things still to come, each at least one byte: more than the bytes left
  // means the answer was cut short, and must not size an allocation.
  std::size_t count() {
    const auto n = number<std::uint64_t>();
    if (n > in_.size() - pos_) fail();
    return static_cast<std::size_t>(n);
  }
  std::string text() { return std::string(take(count())); }
  std::string_view take(std::size_t n) {
    if (n > in_.size() - pos_) fail();
    const std::string_view s = in_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  bool at_end() const { return pos_ == in_.size(); }
  [[noreturn]] void fail() const {
    throw InputError("the reader's answer is cut short or not in its format (byte " + std::to_string(pos_) + ")");
  }

 private:
  std::string_view in_;
  std::size_t pos_ = 0;
};

}  // namespace

std::string encode_result_file(const ResultFile& file) {
  Writer w;
  w.raw(kTag);
  w.count(file.attributes.size());
  for (const auto& [k, v] : file.attributes) w.text(k), w.text(v);
  w.count(file.records.size());
  for (const Record& r : file.records) {
    for (const std::string* s : {&r.phase, &r.job_id, &r.array_job_id, &r.array_task_id}) w.text(*s);
    w.number<std::int32_t>(r.rank);
    w.text(r.node);
    w.number<std::int32_t>(r.gpu_index);
    for (const std::string* s : {&r.gpu_uuid, &r.test, &r.metric}) w.text(*s);
    w.number<double>(r.value);
    w.text(r.unit);
    w.count(r.params.size());
    for (const auto& [k, v] : r.params) w.text(k), w.text(v);
    w.number<std::uint8_t>(static_cast<std::uint8_t>(r.status));
    w.text(r.message);
  }
  w.count(file.documents.size());
  for (const auto& [name, texts] : file.documents) {
    w.text(name);
    w.count(texts.size());
    for (const auto& t : texts) w.text(t);
  }
  return w.take();
}

ResultFile decode_result_file(std::string_view bytes) {
  Reader r(bytes);
  if (r.take(kTag.size()) != kTag) r.fail();
  ResultFile f;
  for (std::size_t n = r.count(); n > 0; --n) {
    std::string k = r.text();
    f.attributes[std::move(k)] = r.text();
  }
  const std::size_t records = r.count();
  f.records.reserve(records);
  for (std::size_t i = 0; i < records; ++i) {
    Record rec;
    for (std::string* s : {&rec.phase, &rec.job_id, &rec.array_job_id, &rec.array_task_id}) *s = r.text();
    rec.rank = r.number<std::int32_t>();
    rec.node = r.text();
    rec.gpu_index = r.number<std::int32_t>();
    for (std::string* s : {&rec.gpu_uuid, &rec.test, &rec.metric}) *s = r.text();
    rec.value = r.number<double>();
    rec.unit = r.text();
    for (std::size_t n = r.count(); n > 0; --n) {
      std::string k = r.text();
      rec.params[std::move(k)] = r.text();
    }
    const auto status = r.number<std::uint8_t>();
    if (status > static_cast<std::uint8_t>(Status::Error)) r.fail();
    rec.status = static_cast<Status>(status);
    rec.message = r.text();
    f.records.push_back(std::move(rec));
  }
  for (std::size_t n = r.count(); n > 0; --n) {
    std::string name = r.text();
    auto& texts = f.documents[std::move(name)];
    for (std::size_t m = r.count(); m > 0; --m) texts.push_back(r.text());
  }
  if (!r.at_end()) r.fail();
  return f;
}

}  // namespace gpuaccept
