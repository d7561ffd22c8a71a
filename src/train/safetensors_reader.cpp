#include "train/safetensors_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "common/error.h"

namespace gpuaccept::train {

// safetensors stores every number little-endian; reading them as host integers and floats
// (memcpy, not byte swaps) is only right on a little-endian host, which x86-64 and aarch64 are.
static_assert(std::endian::native == std::endian::little, "safetensors_reader assumes a little-endian host");

namespace {

using nlohmann::json;

struct DtypeEntry {
  Dtype dtype;
  const char* name;
  std::size_t size;
};
constexpr std::array<DtypeEntry, 15> kDtypes{{
    {Dtype::boolean, "BOOL", 1}, {Dtype::u8, "U8", 1},   {Dtype::i8, "I8", 1},       {Dtype::f8_e5m2, "F8_E5M2", 1},
    {Dtype::f8_e4m3, "F8_E4M3", 1}, {Dtype::i16, "I16", 2}, {Dtype::u16, "U16", 2}, {Dtype::f16, "F16", 2},
    {Dtype::bf16, "BF16", 2},    {Dtype::i32, "I32", 4},  {Dtype::u32, "U32", 4},    {Dtype::f32, "F32", 4},
    {Dtype::f64, "F64", 8},      {Dtype::i64, "I64", 8},  {Dtype::u64, "U64", 8},
}};

const DtypeEntry& entry(Dtype d) {
  for (const auto& e : kDtypes)
    if (e.dtype == d) return e;
  throw std::logic_error("safetensors_reader: a Dtype without a table entry");
}

// Closes the file if the constructor throws before the descriptor is handed to the object.
class FdHolder {
 public:
  explicit FdHolder(int fd) : fd_(fd) {}
  ~FdHolder() {
    if (fd_ >= 0) ::close(fd_);
  }
  FdHolder(const FdHolder&) = delete;
  FdHolder& operator=(const FdHolder&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// Reads up to `bytes` at `offset`, retrying short reads and EINTR; returns fewer only at end of file.
std::uint64_t pread_fully(int fd, const std::filesystem::path& path, void* dst, std::uint64_t bytes,
                          std::uint64_t offset) {
  // Linux moves at most ~2 GiB per call; smaller pieces also keep each call's off_t in range.
  constexpr std::uint64_t kMaxPerCall = 1ull << 30;
  auto* out = static_cast<unsigned char*>(dst);
  std::uint64_t done = 0;
  while (done < bytes) {
    const std::uint64_t want = std::min(bytes - done, kMaxPerCall);
    const ssize_t got = ::pread(fd, out + done, want, static_cast<off_t>(offset + done));
    if (got < 0) {
      if (errno == EINTR) continue;
      raise_call_error("libc", "pread", fmt::format("{}: {}", path.string(), errno_text()));
    }
    if (got == 0) break;
    done += static_cast<std::uint64_t>(got);
  }
  return done;
}

std::string offsets_text(std::uint64_t b, std::uint64_t e) { return fmt::format("[{}, {}]", b, e); }

// A JSON value for a message: the start of it, so a huge or binary value stays readable.
std::string excerpt(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
}

// A parse error quotes the bytes it stopped at, which may be anything; escaped, the message
// stays printable UTF-8 wherever it goes next (the job log, a results file's JSON).
std::string printable(std::string_view s) {
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7f)
      out += ch;
    else
      out += fmt::format("\\x{:02x}", c);
  }
  return out;
}

// Thrown from the parse callback to stop parsing; turned into an InputError by the caller.
struct HeaderRefused {
  std::string why;
};

// A valid header nests three deep (the object, a tensor's entry, its shape or offsets); more
// is refused while parsing, before a crafted "[[[[..." of 100 MiB builds millions of arrays.
// Duplicate tensor names are refused too: JSON parsers keep one of them silently, and which
// bytes are the tensor would then depend on the parser.
json parse_header_json(const std::string& text) {
  std::set<std::string, std::less<>> seen;
  const json::parser_callback_t check = [&seen](int depth, json::parse_event_t event, json& parsed) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) && depth >= 3)
      throw HeaderRefused{"nests deeper than a safetensors header (3 levels)"};
    if (event == json::parse_event_t::key && depth == 1 && parsed.is_string()) {
      const auto& key = parsed.get_ref<const std::string&>();
      if (!seen.insert(key).second) throw HeaderRefused{fmt::format("names tensor '{}' twice", key)};
    }
    return true;
  };
  return json::parse(text, check);
}

std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b, bool& overflow) {
  std::uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) overflow = true;
  return r;
}

const TensorInfo& require_shape(const SafetensorsFile& f, std::string_view name, const std::vector<std::int64_t>& shape) {
  const TensorInfo& t = f.tensor(name);
  if (t.shape != shape)
    throw InputError(fmt::format("{}: tensor '{}': shape: expected {}, found {}", f.path().string(), name,
                                 format_shape(shape), format_shape(t.shape)));
  return t;
}

}  // namespace

const char* dtype_name(Dtype d) { return entry(d).name; }
std::size_t dtype_size(Dtype d) { return entry(d).size; }
std::optional<Dtype> dtype_from_name(std::string_view s) {
  for (const auto& e : kDtypes)
    if (s == e.name) return e.dtype;
  return std::nullopt;
}

std::uint64_t TensorInfo::numel() const {
  std::uint64_t n = 1;
  for (const std::int64_t d : shape) n *= static_cast<std::uint64_t>(d);
  return n;
}

std::string format_shape(const std::vector<std::int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

// ---- SafetensorsFile ----

SafetensorsFile::SafetensorsFile(std::filesystem::path path) : path_(std::move(path)) {
  const std::string where = path_.string();
  FdHolder fd(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) throw InputError(fmt::format("{}: cannot open: {}", where, errno_text()));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) raise_call_error("libc", "fstat", fmt::format("{}: {}", where, errno_text()));
  if (!S_ISREG(st.st_mode)) throw InputError(fmt::format("{}: not a regular file", where));
  file_size_ = static_cast<std::uint64_t>(st.st_size);

  if (file_size_ < 8)
    throw InputError(fmt::format("{}: {} bytes long, shorter than a safetensors file's 8-byte header length",
                                 where, file_size_));
  unsigned char len_bytes[8];
  if (pread_fully(fd.get(), path_, len_bytes, 8, 0) != 8)
    throw InputError(fmt::format("{}: the file ended while reading its header length", where));
  std::uint64_t n = 0;
  std::memcpy(&n, len_bytes, 8);
  // Both bounds before allocating: a length field of garbage must not become a huge allocation.
  if (n > file_size_ - 8)
    throw InputError(fmt::format("{}: header length {} bytes is larger than the file ({} bytes): not a "
                                 "safetensors file, or truncated",
                                 where, n, file_size_));
  if (n > kMaxSafetensorsHeaderBytes)
    throw InputError(fmt::format("{}: header length {} bytes is over the limit of {} bytes", where, n,
                                 kMaxSafetensorsHeaderBytes));
  std::string text(n, '\0');
  if (pread_fully(fd.get(), path_, text.data(), n, 8) != n)
    throw InputError(fmt::format("{}: the file ended while reading its {}-byte header", where, n));
  data_start_ = 8 + n;

  json header;
  try {
    header = parse_header_json(text);
  } catch (const json::exception& e) {
    throw InputError(fmt::format("{}: the {}-byte header is not valid JSON: {}", where, n, printable(e.what())));
  } catch (const HeaderRefused& e) {
    throw InputError(fmt::format("{}: the header {}", where, e.why));
  }
  if (!header.is_object())
    throw InputError(fmt::format("{}: the header is a JSON {}, not an object of tensors", where, header.type_name()));

  const std::uint64_t data_size = file_size_ - data_start_;
  for (const auto& [name, v] : header.items()) {
    if (name == "__metadata__") {
      if (!v.is_object()) throw InputError(fmt::format("{}: __metadata__ is a JSON {}, not an object", where, v.type_name()));
      for (const auto& [key, value] : v.items()) {
        if (!value.is_string())
          throw InputError(fmt::format("{}: __metadata__ '{}' is {}, not a string", where, key, excerpt(value)));
        metadata_[key] = value.get<std::string>();
      }
      continue;
    }
    const std::string what = fmt::format("{}: tensor '{}'", where, name);
    if (!v.is_object()) throw InputError(fmt::format("{}: entry is {}, not an object", what, excerpt(v)));
    TensorInfo t;
    t.name = name;

    const auto dtype_it = v.find("dtype");
    if (dtype_it == v.end() || !dtype_it->is_string())
      throw InputError(fmt::format("{}: no \"dtype\" string", what));
    const auto dtype = dtype_from_name(dtype_it->get_ref<const std::string&>());
    if (!dtype) throw InputError(fmt::format("{}: unknown dtype {}", what, excerpt(*dtype_it)));
    t.dtype = *dtype;

    // nlohmann keeps a non-negative integer as unsigned, a negative one as signed and one past
    // 2^64 as a double: only is_number_unsigned() is a usable size or offset.
    const auto shape_it = v.find("shape");
    if (shape_it == v.end() || !shape_it->is_array())
      throw InputError(fmt::format("{}: no \"shape\" list", what));
    for (const auto& d : *shape_it) {
      if (!d.is_number_unsigned() || d.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        throw InputError(fmt::format("{}: shape {} is not a list of non-negative 63-bit integers", what, excerpt(*shape_it)));
      t.shape.push_back(d.get<std::int64_t>());
    }
    // An empty dimension makes the tensor empty however large the others are.
    bool overflow = false;
    std::uint64_t numel = 1;
    if (std::find(t.shape.begin(), t.shape.end(), 0) != t.shape.end())
      numel = 0;
    else
      for (const std::int64_t d : t.shape) numel = checked_mul(numel, static_cast<std::uint64_t>(d), overflow);
    const std::uint64_t need = checked_mul(numel, dtype_size(t.dtype), overflow);
    if (overflow)
      throw InputError(fmt::format("{}: shape {} of {} is more than 2^64 bytes", what, format_shape(t.shape),
                                   dtype_name(t.dtype)));

    const auto off_it = v.find("data_offsets");
    if (off_it == v.end()) throw InputError(fmt::format("{}: no \"data_offsets\"", what));
    if (!off_it->is_array() || off_it->size() != 2 || !(*off_it)[0].is_number_unsigned() ||
        !(*off_it)[1].is_number_unsigned())
      throw InputError(fmt::format("{}: data_offsets {} are not two integers in [0, 2^64)", what, excerpt(*off_it)));
    t.begin = (*off_it)[0].get<std::uint64_t>();
    t.end = (*off_it)[1].get<std::uint64_t>();
    if (t.end < t.begin)
      throw InputError(fmt::format("{}: data_offsets {} end before they begin", what, offsets_text(t.begin, t.end)));
    if (t.end > data_size)
      throw InputError(fmt::format("{}: data_offsets {} beyond the file's data section of {} bytes (truncated file?)",
                                   what, offsets_text(t.begin, t.end), data_size));
    if (t.end - t.begin != need)
      throw InputError(fmt::format("{}: data_offsets {} hold {} bytes, but shape {} of {} needs {}", what,
                                   offsets_text(t.begin, t.end), t.end - t.begin, format_shape(t.shape),
                                   dtype_name(t.dtype), need));
    tensors_.push_back(std::move(t));
  }

  // Gaps between tensors are harmless to a reader and not refused; shared bytes are: writing
  // one tensor's slice would silently be another's. Empty tensors own no bytes.
  std::vector<const TensorInfo*> by_offset;
  for (const auto& t : tensors_)
    if (t.bytes() > 0) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const TensorInfo* a, const TensorInfo* b) { return a->begin < b->begin; });
  for (std::size_t i = 1; i < by_offset.size(); ++i) {
    const TensorInfo& a = *by_offset[i - 1];
    const TensorInfo& b = *by_offset[i];
    if (b.begin < a.end)
      throw InputError(fmt::format("{}: tensor '{}' (data_offsets {}) and tensor '{}' (data_offsets {}) overlap", where,
                                   a.name, offsets_text(a.begin, a.end), b.name, offsets_text(b.begin, b.end)));
  }
  std::sort(tensors_.begin(), tensors_.end(), [](const TensorInfo& a, const TensorInfo& b) { return a.name < b.name; });
  fd_ = fd.release();
}

SafetensorsFile::~SafetensorsFile() {
  if (fd_ >= 0) ::close(fd_);
}

SafetensorsFile::SafetensorsFile(SafetensorsFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      path_(std::move(other.path_)),
      file_size_(std::exchange(other.file_size_, 0)),
      data_start_(std::exchange(other.data_start_, 0)),
      tensors_(std::move(other.tensors_)),
      metadata_(std::move(other.metadata_)) {
  // A moved-from path, vector and map are only "valid but unspecified": empty them, so that a
  // moved-from file reads as no file at all.
  other.path_.clear();
  other.tensors_.clear();
  other.metadata_.clear();
}

SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
    file_size_ = std::exchange(other.file_size_, 0);
    data_start_ = std::exchange(other.data_start_, 0);
    tensors_ = std::move(other.tensors_);
    metadata_ = std::move(other.metadata_);
    other.path_.clear();
    other.tensors_.clear();
    other.metadata_.clear();
  }
  return *this;
}

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
  const auto it = std::lower_bound(tensors_.begin(), tensors_.end(), name,
                                   [](const TensorInfo& t, std::string_view n) { return t.name < n; });
  return it != tensors_.end() && it->name == name ? &*it : nullptr;
}

const TensorInfo& SafetensorsFile::tensor(std::string_view name) const {
  if (const TensorInfo* t = find(name)) return *t;
  throw InputError(fmt::format("{}: no tensor '{}'", path_.string(), name));
}

void SafetensorsFile::read_bytes(const TensorInfo& t, std::uint64_t offset, std::uint64_t bytes, void* dst) const {
  const std::uint64_t at = data_start_ + t.begin + offset;
  const std::uint64_t got = pread_fully(fd_, path_, dst, bytes, at);
  if (got != bytes)
    throw InputError(fmt::format("{}: tensor '{}': the file ended at byte {} while reading bytes [{}, {}): it has "
                                 "shrunk since it was opened",
                                 path_.string(), t.name, at + got, at, at + bytes));
}

void SafetensorsFile::read_elements(std::string_view name, std::uint64_t first_element, std::uint64_t count,
                                    void* dst) const {
  if (fd_ < 0) throw std::logic_error("SafetensorsFile: read from a moved-from file");
  const TensorInfo& t = tensor(name);
  const std::uint64_t n = t.numel();
  if (first_element > n || count > n - first_element)
    throw std::out_of_range(fmt::format("{}: tensor '{}': elements [{}, +{}) are not inside its {} elements",
                                        path_.string(), t.name, first_element, count, n));
  const std::size_t size = dtype_size(t.dtype);
  read_bytes(t, first_element * size, count * size, dst);
}

void SafetensorsFile::read_bf16(std::string_view name, std::uint64_t first_element, std::uint64_t count,
                                std::uint16_t* dst) const {
  if (fd_ < 0) throw std::logic_error("SafetensorsFile: read from a moved-from file");
  const TensorInfo& t = tensor(name);
  if (t.dtype == Dtype::bf16) return read_elements(name, first_element, count, dst);
  if (t.dtype != Dtype::f16 && t.dtype != Dtype::f32)
    throw InputError(fmt::format("{}: tensor '{}': dtype {} cannot be read as bf16 (BF16, F16 or F32 only)",
                                 path_.string(), t.name, dtype_name(t.dtype)));
  const std::uint64_t n = t.numel();
  if (first_element > n || count > n - first_element)
    throw std::out_of_range(fmt::format("{}: tensor '{}': elements [{}, +{}) are not inside its {} elements",
                                        path_.string(), t.name, first_element, count, n));
  // Converted through a bounded staging buffer, so a rank's multi-GiB slice of an F32 file
  // costs 4 MiB of extra host memory, not a second copy of the slice.
  constexpr std::uint64_t kChunk = 1u << 20;
  const std::size_t size = dtype_size(t.dtype);
  std::vector<unsigned char> staging(static_cast<std::size_t>(std::min(count, kChunk)) * size);
  for (std::uint64_t done = 0; done < count;) {
    const std::uint64_t step = std::min(count - done, kChunk);
    read_bytes(t, (first_element + done) * size, step * size, staging.data());
    convert_to_bf16(t.dtype, staging.data(), static_cast<std::size_t>(step), dst + done);
    done += step;
  }
}

// ---- SafetensorsCheckpoint ----

SafetensorsCheckpoint::SafetensorsCheckpoint(std::filesystem::path dir) : dir_(std::move(dir)) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // A file given by name is an index when it is named like one, else a single safetensors file.
  const bool named_file = fs::is_regular_file(dir_, ec);
  const bool named_index = named_file && dir_.filename().string().ends_with(".index.json");
  const fs::path single = named_file ? dir_ : dir_ / "model.safetensors";
  const fs::path index = named_index ? dir_ : dir_ / "model.safetensors.index.json";
  const fs::path shard_dir = named_index ? dir_.parent_path() : dir_;
  if (!named_index && fs::exists(single, ec)) {
    listing_ = single;
    files_.emplace_back(single);
    for (const auto& t : files_.front().tensors()) file_index_.emplace(t.name, 0);
    return;
  }
  if (!named_index && !fs::is_directory(dir_, ec))
    throw InputError(fmt::format("{}: no such checkpoint directory or file", dir_.string()));
  if (!fs::exists(index, ec))
    throw InputError(fmt::format("{}: holds neither model.safetensors nor model.safetensors.index.json", dir_.string()));

  listing_ = index;
  sharded_ = true;
  const std::string where = index.string();
  const auto size = fs::file_size(index, ec);
  if (ec) throw InputError(fmt::format("{}: cannot read: {}", where, ec.message()));
  if (size > kMaxSafetensorsHeaderBytes)
    throw InputError(fmt::format("{}: {} bytes, over the limit of {} bytes for an index", where, size,
                                 kMaxSafetensorsHeaderBytes));
  std::ifstream in(index, std::ios::binary);
  std::string text(size, '\0');
  if (!in || !in.read(text.data(), static_cast<std::streamsize>(size)))
    throw InputError(fmt::format("{}: cannot read", where));
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw InputError(fmt::format("{}: not valid JSON: {}", where, printable(e.what())));
  }
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    throw InputError(fmt::format("{}: no \"weight_map\" object", where));
  const json& weight_map = j["weight_map"];
  if (weight_map.empty()) throw InputError(fmt::format("{}: the weight_map is empty", where));

  std::map<std::string, std::size_t> shard_index;  // shard file name -> files_[i]
  for (const auto& [name, shard] : weight_map.items()) {
    if (!shard.is_string())
      throw InputError(fmt::format("{}: tensor '{}': shard {} is not a file name", where, name, excerpt(shard)));
    const auto& shard_name = shard.get_ref<const std::string&>();
    // The index comes with the checkpoint; a shard path leading out of the directory is a
    // broken (or hostile) index, not a file to open.
    const fs::path rel(shard_name);
    if (rel.empty() || rel.is_absolute() || std::any_of(rel.begin(), rel.end(), [](const fs::path& c) { return c == ".."; }))
      throw InputError(fmt::format("{}: tensor '{}': shard '{}' is not a file inside {}", where, name, shard_name,
                                   shard_dir.string()));
    auto it = shard_index.find(shard_name);
    if (it == shard_index.end()) {
      files_.emplace_back(shard_dir / rel);
      it = shard_index.emplace(shard_name, files_.size() - 1).first;
    }
    if (!files_[it->second].find(name))
      throw InputError(fmt::format("{}: tensor '{}' is mapped to {}, which holds no such tensor", where, name,
                                   files_[it->second].path().string()));
    file_index_.emplace(name, it->second);
  }
}

std::vector<std::string> SafetensorsCheckpoint::tensor_names() const {
  std::vector<std::string> names;
  names.reserve(file_index_.size());
  for (const auto& [name, file] : file_index_) names.push_back(name);
  return names;
}

const TensorInfo* SafetensorsCheckpoint::find(std::string_view name) const {
  const auto it = file_index_.find(name);
  return it == file_index_.end() ? nullptr : files_[it->second].find(name);
}

const SafetensorsFile& SafetensorsCheckpoint::file_of(std::string_view name) const {
  const auto it = file_index_.find(name);
  if (it == file_index_.end())
    throw InputError(fmt::format("{}: no tensor '{}'{}", listing_.string(), name, sharded_ ? " in the weight_map" : ""));
  return files_[it->second];
}

const TensorInfo& SafetensorsCheckpoint::require(std::string_view name, const std::vector<std::int64_t>& shape,
                                                 Dtype dtype) const {
  const SafetensorsFile& f = file_of(name);
  const TensorInfo& t = require_shape(f, name, shape);
  if (t.dtype != dtype)
    throw InputError(fmt::format("{}: tensor '{}': dtype: expected {}, found {}", f.path().string(), name,
                                 dtype_name(dtype), dtype_name(t.dtype)));
  return t;
}

const TensorInfo& SafetensorsCheckpoint::require_bf16_source(std::string_view name,
                                                             const std::vector<std::int64_t>& shape) const {
  const SafetensorsFile& f = file_of(name);
  const TensorInfo& t = require_shape(f, name, shape);
  if (t.dtype != Dtype::bf16 && t.dtype != Dtype::f16 && t.dtype != Dtype::f32)
    throw InputError(fmt::format("{}: tensor '{}': dtype: expected BF16, F16 or F32, found {}", f.path().string(),
                                 name, dtype_name(t.dtype)));
  return t;
}

// ---- bf16 conversion ----

std::uint16_t bf16_from_f32(float x) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  // A NaN's payload could round up into the exponent and become infinity: keep it a NaN.
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
  // Round to nearest even: add just under half an ulp of bf16, plus one when the kept part is
  // odd, then truncate. A carry into the exponent is the right result, up to infinity.
  return static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

float f32_from_bf16(std::uint16_t b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }

float f32_from_f16(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t mant = h & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: mant x 2^-24, exact in float
    const float mag = static_cast<float>(mant) * 0x1p-24f;
    return sign ? -mag : mag;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));  // infinity, NaN
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));         // rebias 15 -> 127
}

void convert_to_bf16(Dtype source, const void* src, std::size_t count, std::uint16_t* dst) {
  const auto* in = static_cast<const unsigned char*>(src);
  switch (source) {
    case Dtype::bf16:
      std::memcpy(dst, in, count * 2);
      return;
    case Dtype::f16:
      for (std::size_t i = 0; i < count; ++i) {
        std::uint16_t h;  // memcpy: src need not be aligned
        std::memcpy(&h, in + 2 * i, 2);
        dst[i] = bf16_from_f32(f32_from_f16(h));
      }
      return;
    case Dtype::f32:
      for (std::size_t i = 0; i < count; ++i) {
        float f;
        std::memcpy(&f, in + 4 * i, 4);
        dst[i] = bf16_from_f32(f);
      }
      return;
    default:
      throw std::invalid_argument(fmt::format("convert_to_bf16: {} is not BF16, F16 or F32", dtype_name(source)));
  }
}

}  // namespace gpuaccept::train
