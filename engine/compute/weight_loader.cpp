#include "engine/compute/weight_loader.hpp"

namespace engine {

namespace {

cpu::ScaleType scale_type(const std::string& dtype) {
  return dtype == "F32" ? cpu::ScaleType::kF32 : dtype == "F16" ? cpu::ScaleType::kF16 : cpu::ScaleType::kBF16;
}

}  // namespace

Weight WeightLoader::load(const ModuleLayout& l, std::int64_t stack, const Block& b) const {
  const std::int64_t row0 = stack * l.out + b.row;  // in the rows of all stacked matrices
  const int rows = static_cast<int>(b.rows), cols = static_cast<int>(b.cols);
  std::shared_ptr<const void> mapped = layout_.checkpoint();
  if (!l.scales) {
    const unsigned char* base = l.file->bytes(*l.weight);
    if (l.weight->dtype == "F32" && l.file->file_offset(*l.weight) % alignof(float) == 0)
      return Weight::dense(reinterpret_cast<const float*>(base) + row0 * l.in + b.col, l.in, rows, cols, mapped);
    // 16-bit floats, or f32 at an odd offset: the block, converted.
    auto owned = std::make_shared<std::vector<float>>(static_cast<std::size_t>(rows) * cols);
    const int eb = dtype_bytes(l.weight->dtype);
    for (int r = 0; r < rows; ++r)
      to_floats(l.weight->dtype, base + ((row0 + r) * l.in + b.col) * eb, cols, owned->data() + r * cols);
    Weight w = Weight::dense(owned->data(), cols, rows, cols, owned);
    w.set_copied(true);
    return w;
  }
  cpu::AffineRows a;
  a.bits = l.params.bits;
  a.group = l.params.group_size;
  a.row_words = l.in * a.bits / 32;
  a.row_groups = l.in / a.group;
  a.scale_type = scale_type(l.scales->dtype);
  const std::size_t sb = dtype_bytes(l.scales->dtype);
  // In place at any alignment (MLX's writer does not align tensors): the kernels read them so.
  a.q = l.file->bytes(*l.weight) + row0 * a.row_words * 4;
  a.scales = l.scales_file->bytes(*l.scales) + row0 * a.row_groups * sb;
  a.biases = l.biases_file->bytes(*l.biases) + row0 * a.row_groups * sb;
  return Weight::affine(a, b.col, rows, cols, mapped);
}

Weight WeightLoader::matrix(const std::string& module, std::int64_t out, std::int64_t in, const Block& b) const {
  return load(layout_.module(module, out, in, 0), 0, b);
}

Weight WeightLoader::expert(int layer, int e, const std::string& proj, std::int64_t out, std::int64_t in,
                            const Block& b) const {
  std::int64_t stacked = 0;
  const std::string module = layout_.expert_module(layer, e, proj, stacked);
  return load(layout_.module(module, out, in, stacked), stacked ? e : 0, b);
}

std::vector<float> WeightLoader::vector(const std::string& name, std::int64_t n) const {
  return layout_.checkpoint()->file(name).read(name, {n});
}

}  // namespace engine
