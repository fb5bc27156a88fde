// The safetensors format (Hugging Face): an 8-byte little-endian header
// length, a JSON header {name: {dtype, shape, data_offsets}, "__metadata__"},
// then the tensors' bytes. Read F32, BF16 and F16 (as float); write F32.
// Every refusal is an InputError naming the file, the tensor and the reason.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace engine {

struct TensorInfo {
  std::string dtype;  // "F32", "BF16", "F16"
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0, end = 0;  // byte offsets in the data section
};

struct NamedTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  std::vector<float> data;  // row-major. REQUIRES: size == product of shape
};

// Writes `tensors` as F32, in the given order, with `metadata` as __metadata__.
void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

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

  // The whole tensor, row-major.
  std::vector<float> read(const std::string& name, const std::vector<std::int64_t>& shape) const;
  // Rows [row, row+rows) and columns [col, col+cols) of a 2-D tensor (or of a
  // 1-D tensor seen as one row): only those bytes are touched.
  std::vector<float> read_block(const std::string& name, const std::vector<std::int64_t>& shape, std::int64_t row,
                                std::int64_t rows, std::int64_t col, std::int64_t cols) const;

 private:
  std::string path_;
  const unsigned char* map_ = nullptr;
  std::size_t size_ = 0;
  std::size_t data_begin_ = 0;
  std::map<std::string, TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace engine
