#include "engine/checkpoint/safetensors.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/base/error.hpp"

namespace engine {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

namespace {

using nlohmann::json;

// A header larger than this is a corrupt length, not a model (HF caps it at 100 MB).
constexpr std::uint64_t kMaxHeaderBytes = 100u << 20;

std::string tensor_path(const std::string& name) { return "/" + name; }

std::int64_t elements(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

}  // namespace

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16;
  int exp = (h >> 10) & 0x1f;
  std::uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));  // inf, nan
  if (exp == 0) {
    if (mant == 0) return std::bit_cast<float>(sign);
    // Subnormal: normalise the mantissa.
    exp = 1;
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --exp;
    }
    mant &= 0x3ffu;
  }
  return std::bit_cast<float>(sign | (static_cast<std::uint32_t>(exp + 112) << 23) | (mant << 13));
}

int dtype_bytes(const std::string& dtype) {
  if (dtype == "F32" || dtype == "U32") return 4;
  if (dtype == "BF16" || dtype == "F16") return 2;
  return 0;
}

void to_floats(const std::string& dtype, const unsigned char* src, std::int64_t n, float* out) {
  if (dtype == "F32") {
    std::memcpy(out, src, n * sizeof(float));
    return;
  }
  for (std::int64_t i = 0; i < n; ++i) out[i] = element_to_float(dtype, src + 2 * i);
}

float element_to_float(const std::string& dtype, const unsigned char* src) {
  if (dtype == "F32") {
    float f;
    std::memcpy(&f, src, 4);
    return f;
  }
  std::uint16_t v;
  std::memcpy(&v, src, 2);
  return dtype == "BF16" ? bf16_to_float(v) : half_to_float(v);
}

void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::vector<RawTensor> raw;
  for (const NamedTensor& t : tensors) {
    if (elements(t.shape) != static_cast<std::int64_t>(t.data.size()))
      throw std::invalid_argument(
          fmt::format("tensor {}: {} values for shape [{}]", t.name, t.data.size(), fmt::join(t.shape, ", ")));
    raw.push_back({t.name,
                   "F32",
                   t.shape,
                   {reinterpret_cast<const unsigned char*>(t.data.data()), t.data.size() * sizeof(float)}});
  }
  write_safetensors(path, raw, metadata, true);
}

void write_safetensors(const std::string& path, const std::vector<RawTensor>& tensors,
                       const std::map<std::string, std::string>& metadata, bool pad) {
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::uint64_t offset = 0;
  for (const RawTensor& t : tensors) {
    if (static_cast<std::uint64_t>(elements(t.shape)) * dtype_bytes(t.dtype) != t.bytes.size())
      throw std::invalid_argument(fmt::format("tensor {}: {} bytes for shape [{}] of {}", t.name, t.bytes.size(),
                                              fmt::join(t.shape, ", "), t.dtype));
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string text = header.dump();
  if (pad) text.append((8 - text.size() % 8) % 8, ' ');  // keeps the data 8-byte aligned, as HF's writer does
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw InputError(path, "", "cannot create the file");
  const std::uint64_t length = text.size();
  out.write(reinterpret_cast<const char*>(&length), sizeof length);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const RawTensor& t : tensors)
    out.write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
  if (!out.flush()) throw InputError(path, "", "write failed");
}

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw InputError(path, "", fmt::format("cannot open: {}", std::strerror(errno)));
  struct stat st {};
  ::fstat(fd, &st);
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ > 0) {
    void* m = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      ::close(fd);
      throw InputError(path, "", fmt::format("cannot map: {}", std::strerror(errno)));
    }
    map_ = static_cast<const unsigned char*>(m);
#ifdef MADV_HUGEPAGE
    // Pages the file does not have in the page cache yet are read in 2 MB
    // pieces (where the kernel gives files large pages), physically
    // contiguous: the row dots streamed the weights ~25% faster from such a
    // copy of a checkpoint than from one read in 4 KB pages. Advice only: a
    // file cached already keeps its pages.
    ::madvise(m, size_, MADV_HUGEPAGE);
#endif
  }
  ::close(fd);
  try {
    if (size_ < 8)
      throw InputError(path, "", fmt::format("truncated: {} bytes, shorter than the 8-byte header length", size_));
    std::uint64_t length;
    std::memcpy(&length, map_, 8);
    if (length > kMaxHeaderBytes || 8 + length > size_)
      throw InputError(path, "",
                       fmt::format("truncated or corrupt: header of {} bytes in a {}-byte file", length, size_));
    data_begin_ = 8 + length;
    json header;
    try {
      header = json::parse(map_ + 8, map_ + data_begin_);
    } catch (const json::parse_error& e) {
      throw InputError(path, "", std::string("header is not JSON: ") + e.what());
    }
    if (!header.is_object()) throw InputError(path, "", "header must be a JSON object");
    const std::uint64_t data_size = size_ - data_begin_;
    for (const auto& [name, v] : header.items()) {
      if (name == "__metadata__") {
        if (!v.is_object()) throw InputError(path, "/__metadata__", "must be an object of strings");
        for (const auto& [k, s] : v.items()) {
          if (!s.is_string()) throw InputError(path, "/__metadata__/" + k, "must be a string");
          metadata_[k] = s.get<std::string>();
        }
        continue;
      }
      const std::string where = tensor_path(name);
      if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
        throw InputError(path, where, "needs dtype, shape and data_offsets");
      TensorInfo t;
      try {
        t.dtype = v["dtype"].get<std::string>();
        t.shape = v["shape"].get<std::vector<std::int64_t>>();
        const auto offsets = v["data_offsets"].get<std::vector<std::uint64_t>>();
        if (offsets.size() != 2) throw InputError(path, where + "/data_offsets", "must be [begin, end]");
        t.begin = offsets[0];
        t.end = offsets[1];
      } catch (const json::exception& e) {
        throw InputError(path, where, std::string("malformed entry: ") + e.what());
      }
      const int eb = dtype_bytes(t.dtype);
      if (eb == 0)
        throw InputError(path, where + "/dtype",
                         fmt::format("dtype {} is not supported (F32, BF16, F16 and U32 are)", t.dtype));
      for (std::int64_t d : t.shape)
        if (d < 0 || d > (std::int64_t{1} << 40))
          throw InputError(path, where + "/shape", fmt::format("bad dimension {}", d));
      if (t.begin > t.end || t.end > data_size)
        throw InputError(
            path, where + "/data_offsets",
            fmt::format("[{}, {}] is outside the {} bytes of data (truncated file?)", t.begin, t.end, data_size));
      if (t.end - t.begin != static_cast<std::uint64_t>(elements(t.shape)) * eb)
        throw InputError(
            path, where + "/data_offsets",
            fmt::format("{} bytes do not hold shape [{}] of {}", t.end - t.begin, fmt::join(t.shape, ", "), t.dtype));
      tensors_[name] = t;
    }
  } catch (...) {
    if (map_) ::munmap(const_cast<unsigned char*>(map_), size_);
    throw;
  }
}

SafetensorsFile::~SafetensorsFile() {
  if (map_) ::munmap(const_cast<unsigned char*>(map_), size_);
}

const TensorInfo& SafetensorsFile::info(const std::string& name, const std::vector<std::int64_t>& shape) const {
  const auto it = tensors_.find(name);
  if (it == tensors_.end()) throw InputError(path_, tensor_path(name), "missing tensor");
  if (!shape.empty() && it->second.shape != shape)
    throw InputError(
        path_, tensor_path(name) + "/shape",
        fmt::format("is [{}], the config needs [{}]", fmt::join(it->second.shape, ", "), fmt::join(shape, ", ")));
  return it->second;
}

const TensorInfo& SafetensorsFile::float_info(const std::string& name, const std::vector<std::int64_t>& shape) const {
  const TensorInfo& t = info(name, shape);
  if (t.dtype == "U32")
    throw InputError(path_, tensor_path(name) + "/dtype", "is U32 (packed quantized values), where floats are needed");
  return t;
}

std::vector<float> SafetensorsFile::read(const std::string& name, const std::vector<std::int64_t>& shape) const {
  const TensorInfo& t = float_info(name, shape);
  std::vector<float> out(elements(t.shape));
  to_floats(t.dtype, map_ + data_begin_ + t.begin, static_cast<std::int64_t>(out.size()), out.data());
  return out;
}

std::vector<float> SafetensorsFile::read_block(const std::string& name, const std::vector<std::int64_t>& shape,
                                               std::int64_t row, std::int64_t rows, std::int64_t col,
                                               std::int64_t cols) const {
  const TensorInfo& t = float_info(name, shape);
  const std::int64_t height = t.shape.size() == 2 ? t.shape[0] : 1;
  const std::int64_t width = t.shape.empty() ? 1 : t.shape.back();
  if (t.shape.size() > 2 || row < 0 || col < 0 || rows < 0 || cols < 0 || row + rows > height || col + cols > width)
    throw std::out_of_range(
        fmt::format("{}: block [{}+{}, {}+{}] outside [{}]", name, row, rows, col, cols, fmt::join(t.shape, ", ")));
  const int eb = dtype_bytes(t.dtype);
  std::vector<float> out(rows * cols);
  for (std::int64_t r = 0; r < rows; ++r)
    to_floats(t.dtype, map_ + data_begin_ + t.begin + ((row + r) * width + col) * eb, cols, out.data() + r * cols);
  return out;
}

}  // namespace engine
