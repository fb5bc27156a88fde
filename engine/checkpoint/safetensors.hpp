// The safetensors format (Hugging Face): an 8-byte little-endian header
// length, a JSON header {name: {dtype, shape, data_offsets}, "__metadata__"},
// then the tensors' bytes. Read F32, BF16 and F16 (as float) and U32 (MLX's
// packed quantized weights, as raw bytes); write F32.
// Every refusal is an InputError naming the file, the tensor and the reason.
#pragma once

#include <bit>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace engine {

struct TensorInfo {
  std::string dtype;  // "F32", "BF16", "F16", "U32"
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0, end = 0;  // byte offsets in the data section
};

// IEEE half and bfloat16 bits as float (exact: float holds every value of both).
float half_to_float(std::uint16_t h);
inline float bf16_to_float(std::uint16_t b) { return std::bit_cast<float>(std::uint32_t(b) << 16); }

// Bytes of one element of a dtype this reader takes; 0 for the others.
int dtype_bytes(const std::string& dtype);
// A 16- or 32-bit float element of `dtype` ("F32", "BF16", "F16") as float.
float element_to_float(const std::string& dtype, const unsigned char* src);
// `n` such elements from `src` (any alignment) into `out`.
void to_floats(const std::string& dtype, const unsigned char* src, std::int64_t n, float* out);

struct NamedTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  std::vector<float> data;  // row-major. REQUIRES: size == product of shape
};

// Writes `tensors` as F32, in the given order, with `metadata` as __metadata__.
void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// A tensor's bytes as stored, of any dtype dtype_bytes() knows.
struct RawTensor {
  std::string name, dtype;
  std::vector<std::int64_t> shape;
  std::span<const unsigned char> bytes;
};
// The same for raw tensors. `pad`: the header padded to a multiple of 8 bytes
// as Hugging Face's writer does; MLX's does not, so its tensors may be misaligned.
void write_safetensors(const std::string& path, const std::vector<RawTensor>& tensors,
                       const std::map<std::string, std::string>& metadata, bool pad);

// A safetensors file mapped read-only; slices are converted to float on read.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path);  // throws InputError
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  bool has(const std::string& name) const { return tensors_.count(name) > 0; }
  // Throws InputError when missing, or when `shape` is given and differs.
  const TensorInfo& info(const std::string& name, const std::vector<std::int64_t>& shape = {}) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }

  // The tensor's bytes where the file is mapped, and their offset in the file
  // (MLX's writer does not align them: see docs/checkpoint-formats.md#alignment).
  const unsigned char* bytes(const TensorInfo& t) const { return map_ + data_begin_ + t.begin; }
  std::uint64_t file_offset(const TensorInfo& t) const { return data_begin_ + t.begin; }

  // The whole tensor, row-major.
  std::vector<float> read(const std::string& name, const std::vector<std::int64_t>& shape) const;
  // Rows [row, row+rows) and columns [col, col+cols) of a 2-D tensor (or of a
  // 1-D tensor seen as one row): only those bytes are touched.
  std::vector<float> read_block(const std::string& name, const std::vector<std::int64_t>& shape, std::int64_t row,
                                std::int64_t rows, std::int64_t col, std::int64_t cols) const;

 private:
  const TensorInfo& float_info(const std::string& name, const std::vector<std::int64_t>& shape) const;

  std::string path_;
  const unsigned char* map_ = nullptr;
  std::size_t size_ = 0;
  std::size_t data_begin_ = 0;
  std::map<std::string, TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace engine
