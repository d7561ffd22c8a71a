// Reading Hugging Face safetensors files, CPU only: the frozen base of the fsdp-lora phase
// comes from one (each rank reads only the slices it owns), and the training checkpoints both
// training phases write are some (train/checkpoint_files.h).
//
// The format: 8 bytes little-endian u64 N, N bytes of UTF-8 JSON
//   {"__metadata__": {str: str}, "<tensor>": {"dtype": "BF16", "shape": [..], "data_offsets": [b, e]}, ..}
// then the data section; [b, e) are byte offsets into the data section, row-major, little-endian.
// A model directory holds model.safetensors, or model.safetensors.index.json whose "weight_map"
// names the shard file of every tensor.
//
// Everything a file claims is checked when it is opened (header size, JSON, dtypes, shapes,
// byte ranges inside the file and disjoint), so a bad checkpoint is refused with an InputError
// naming the file and the tensor before any rank has read a byte of data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuaccept::train {

// The element types safetensors defines (its names upper-cased: "BF16", "F8_E4M3", ..).
enum class Dtype { boolean, u8, i8, f8_e5m2, f8_e4m3, i16, u16, f16, bf16, i32, u32, f32, f64, i64, u64 };
const char* dtype_name(Dtype d);                          // "BF16"
std::optional<Dtype> dtype_from_name(std::string_view s);  // nullopt for a name safetensors does not define
std::size_t dtype_size(Dtype d);                           // bytes per element

// One tensor of a file as its header describes it.
struct TensorInfo {
  std::string name;
  Dtype dtype = Dtype::bf16;
  std::vector<std::int64_t> shape;  // [] is a scalar (one element)
  std::uint64_t begin = 0;          // bytes [begin, end) of the file's data section
  std::uint64_t end = 0;
  std::uint64_t numel() const;  // fits: checked when the header was read
  std::uint64_t bytes() const { return end - begin; }
};

// "[3584, 512]"
std::string format_shape(const std::vector<std::int64_t>& shape);

// The largest header accepted: Qwen2-7B's is about 30 KiB; the bound keeps a corrupt length
// field from becoming an allocation of gigabytes.
inline constexpr std::uint64_t kMaxSafetensorsHeaderBytes = 100ull << 20;

// One .safetensors file, open for reading. The header is read and validated by the
// constructor; data is read on demand with pread, only the bytes asked for, so any number of
// threads may read through one object at once. Movable; a moved-from object holds no file.
class SafetensorsFile {
 public:
  // Throws InputError naming the file when it cannot be opened or anything in its header is
  // wrong: length field, JSON, dtype, shape, data_offsets (outside the file, not matching the
  // shape, overlapping another tensor), duplicate tensor names.
  explicit SafetensorsFile(std::filesystem::path path);
  ~SafetensorsFile();
  SafetensorsFile(SafetensorsFile&& other) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&& other) noexcept;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  bool is_open() const { return fd_ >= 0; }
  const std::filesystem::path& path() const { return path_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }  // sorted by name
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  std::uint64_t file_size() const { return file_size_; }
  std::uint64_t data_start() const { return data_start_; }  // 8 + N
  std::uint64_t data_size() const { return file_size_ - data_start_; }

  const TensorInfo* find(std::string_view name) const;  // nullptr when absent
  const TensorInfo& tensor(std::string_view name) const;  // throws InputError when absent

  // Copies elements [first_element, first_element + count) of the tensor, in the file's dtype,
  // to dst (count * dtype_size bytes). Throws std::out_of_range when the range is not inside
  // the tensor, InputError when the tensor is absent or the file has shrunk since it was
  // opened, CallError when the read itself fails, std::logic_error on a moved-from object.
  void read_elements(std::string_view name, std::uint64_t first_element, std::uint64_t count, void* dst) const;
  // The same elements as bf16 bit patterns (see convert_to_bf16); BF16, F16 or F32 sources,
  // InputError naming the file and tensor for any other dtype.
  void read_bf16(std::string_view name, std::uint64_t first_element, std::uint64_t count, std::uint16_t* dst) const;

 private:
  void read_bytes(const TensorInfo& t, std::uint64_t offset, std::uint64_t bytes, void* dst) const;

  int fd_ = -1;
  std::filesystem::path path_;
  std::uint64_t file_size_ = 0;
  std::uint64_t data_start_ = 0;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

// A model directory: model.safetensors, or model.safetensors.index.json and its shards (when
// both are there the single file wins, as in transformers). Also accepts the path of a single
// .safetensors file or of an index (a file named *.index.json). Every shard is opened, and so
// validated, by the constructor; the index, not the shards, says which tensors exist.
class SafetensorsCheckpoint {
 public:
  // Throws InputError when the directory holds neither, the index is not valid JSON or has no
  // "weight_map", names a shard outside the directory or a tensor its shard does not hold, or
  // any file fails SafetensorsFile's checks.
  explicit SafetensorsCheckpoint(std::filesystem::path dir);

  const std::filesystem::path& dir() const { return dir_; }
  bool sharded() const { return sharded_; }
  const std::vector<SafetensorsFile>& files() const { return files_; }
  std::vector<std::string> tensor_names() const;  // sorted

  const TensorInfo* find(std::string_view name) const;  // nullptr when absent
  // The file holding the tensor; throws InputError naming the index (or the file) when absent.
  const SafetensorsFile& file_of(std::string_view name) const;

  // The tensor, after checking that it is there with this shape and dtype. Throws InputError
  // naming the file and the tensor: "…/model-00001-of-00004.safetensors: tensor
  // 'model.layers.0.self_attn.q_proj.weight': shape: expected [3584, 3584], found [3584, 512]".
  const TensorInfo& require(std::string_view name, const std::vector<std::int64_t>& shape, Dtype dtype) const;
  // The same for a tensor that will be read with read_bf16: BF16, F16 or F32 accepted.
  const TensorInfo& require_bf16_source(std::string_view name, const std::vector<std::int64_t>& shape) const;

  void read_elements(std::string_view name, std::uint64_t first_element, std::uint64_t count, void* dst) const {
    file_of(name).read_elements(name, first_element, count, dst);
  }
  void read_bf16(std::string_view name, std::uint64_t first_element, std::uint64_t count, std::uint16_t* dst) const {
    file_of(name).read_bf16(name, first_element, count, dst);
  }

 private:
  std::filesystem::path dir_;
  std::filesystem::path listing_;  // the file that says which tensors exist: the index or the single file
  bool sharded_ = false;
  std::vector<SafetensorsFile> files_;
  std::map<std::string, std::size_t, std::less<>> file_index_;  // tensor name -> files_[i]
};

// bf16 from other floating-point formats, as bit patterns (the phase stores its frozen base
// in bf16). F32 -> bf16 rounds to nearest, ties to even, as torch's .to(torch.bfloat16) and
// CUDA's __float2bfloat16_rn do: finite values beyond bf16's largest round to infinity, NaN
// stays a (quiet) NaN with its sign. F16 -> bf16 goes through F32 exactly (every half is a
// float) and then rounds the same way: bf16 has 3 fewer significand bits than half but a wider
// exponent, so halves lose precision yet never overflow, and half subnormals become normals.
std::uint16_t bf16_from_f32(float x);
float f32_from_f16(std::uint16_t h);
float f32_from_bf16(std::uint16_t b);
// count elements of src (BF16 copied, F16 and F32 converted as above) into dst; throws
// std::invalid_argument for any other source dtype.
void convert_to_bf16(Dtype source, const void* src, std::size_t count, std::uint16_t* dst);

}  // namespace gpuaccept::train
