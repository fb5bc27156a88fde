// For bench/cpu-vs-llamacpp.sh: a Llama model directory (make-model's, f32)
// written as GGUF v3 for llama.cpp, its matrices in F32, Q8_0 or Q4_0
// (docs/checkpoint-formats.md#gguf-blocks, rounding as ggml-quants.c's reference quantizers),
// norms in F32, no tokenizer ("none": token ids in, ids out). Q and K rows are
// permuted to GGUF's adjacent-pair RoPE (arch llama, docs/checkpoint-formats.md#rotation-convention) as
// llama.cpp's convert_hf_to_gguf.py does. And the prompt ids a scenario's
// request 0 carries, so both engines are fed the same prompt.
// Usage: gguf_from_model MODEL_DIR OUT.gguf f32|q8_0|q4_0
//        gguf_from_model --prompt TOKENS VOCAB SEED
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "engine/checkpoint/checkpoint.hpp"
#include "engine/checkpoint/model_config.hpp"
#include "engine/input/workload.hpp"

namespace {

enum GgmlType : std::uint32_t { kF32 = 0, kQ4_0 = 2, kQ8_0 = 8 };

// IEEE half, round to nearest even (values here are small and normal, or zero).
std::uint16_t to_half(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  const std::uint32_t sign = (x >> 16) & 0x8000;
  const int exp = static_cast<int>((x >> 23) & 0xff) - 127 + 15;
  std::uint32_t mant = x & 0x7fffff;
  if (exp <= 0) return static_cast<std::uint16_t>(sign);  // too small for these scales: zero
  if (exp >= 31) return static_cast<std::uint16_t>(sign | 0x7c00);
  std::uint32_t h = (static_cast<std::uint32_t>(exp) << 10) | (mant >> 13);
  const std::uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;  // may carry into the exponent, as it should
  return static_cast<std::uint16_t>(sign | h);
}
void put_half(std::vector<unsigned char>& out, float d) {
  const std::uint16_t h = to_half(d);
  out.push_back(static_cast<unsigned char>(h));
  out.push_back(static_cast<unsigned char>(h >> 8));
}

// quantize_row_q8_0_ref: d = amax/127, q = round(x/d).
void q8_0(const float* x, std::int64_t n, std::vector<unsigned char>& out) {
  for (std::int64_t b = 0; b < n; b += 32) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b + j]));
    const float d = amax / 127, id = d ? 1 / d : 0;
    put_half(out, d);
    for (int j = 0; j < 32; ++j) out.push_back(static_cast<unsigned char>(static_cast<std::int8_t>(std::round(x[b + j] * id))));
  }
}

// quantize_row_q4_0_ref: d = max/-8 (max: the value of largest magnitude), q = min(15, x/d + 8.5).
void q4_0(const float* x, std::int64_t n, std::vector<unsigned char>& out) {
  for (std::int64_t b = 0; b < n; b += 32) {
    float amax = 0, max = 0;
    for (int j = 0; j < 32; ++j)
      if (std::fabs(x[b + j]) > amax) amax = std::fabs(x[b + j]), max = x[b + j];
    const float d = max / -8, id = d ? 1 / d : 0;
    put_half(out, d);
    for (int j = 0; j < 16; ++j) {
      const auto lo = static_cast<std::uint8_t>(std::min(15, static_cast<int>(x[b + j] * id + 8.5f)));
      const auto hi = static_cast<std::uint8_t>(std::min(15, static_cast<int>(x[b + 16 + j] * id + 8.5f)));
      out.push_back(static_cast<unsigned char>(lo | (hi << 4)));
    }
  }
}

struct Tensor {
  std::string name;
  std::vector<std::uint64_t> ne;  // GGUF order: ne[0] is the row length
  GgmlType type;
  std::vector<unsigned char> data;
};

class Writer {
 public:
  void str(const std::string& s) {
    u64(s.size());
    bytes_.insert(bytes_.end(), s.begin(), s.end());
  }
  void u32(std::uint32_t v) { raw(&v, 4); }
  void u64(std::uint64_t v) { raw(&v, 8); }
  void f32(float v) { raw(&v, 4); }
  void raw(const void* p, std::size_t n) {
    const auto* c = static_cast<const unsigned char*>(p);
    bytes_.insert(bytes_.end(), c, c + n);
  }
  void pad(std::size_t align) {
    while (bytes_.size() % align) bytes_.push_back(0);
  }
  std::vector<unsigned char>& bytes() { return bytes_; }

 private:
  std::vector<unsigned char> bytes_;
};

enum KvType : std::uint32_t { kUint32 = 4, kFloat32 = 6, kString = 8 };

int convert(const std::string& dir, const std::string& out, const std::string& format) {
  const engine::ModelConfig c = engine::load_model_config(dir);
  if (c.model_type != "llama" || c.num_experts > 0)
    throw std::runtime_error("gguf_from_model: a dense llama model only (make-model --type llama --experts 0)");
  const engine::Checkpoint ck(dir);
  const GgmlType matrix_type = format == "q8_0" ? kQ8_0 : format == "q4_0" ? kQ4_0 : kF32;
  std::vector<Tensor> tensors;
  auto add = [&](const std::string& hf, const std::string& name, bool matrix, int permute_heads = 0) {
    const engine::TensorInfo& info = ck.info(hf);
    std::vector<float> v = ck.file(hf).read(hf, info.shape);
    const std::int64_t cols = info.shape.back(), rows = static_cast<std::int64_t>(v.size()) / cols;
    if (permute_heads > 0) {  // row (h, j, i) of (heads, 2, d/2) goes to (h, i, j) of (heads, d/2, 2)
      const std::int64_t d = rows / permute_heads;
      std::vector<float> p(v.size());
      for (std::int64_t h = 0; h < permute_heads; ++h)
        for (std::int64_t i = 0; i < d / 2; ++i)
          for (std::int64_t j = 0; j < 2; ++j)
            std::copy_n(v.begin() + (h * d + j * (d / 2) + i) * cols, cols, p.begin() + (h * d + i * 2 + j) * cols);
      v.swap(p);
    }
    Tensor t{name, {static_cast<std::uint64_t>(cols)}, matrix ? matrix_type : kF32, {}};
    if (info.shape.size() == 2) t.ne.push_back(static_cast<std::uint64_t>(rows));
    if (t.type == kQ8_0)
      q8_0(v.data(), static_cast<std::int64_t>(v.size()), t.data);
    else if (t.type == kQ4_0)
      q4_0(v.data(), static_cast<std::int64_t>(v.size()), t.data);
    else
      t.data.assign(reinterpret_cast<const unsigned char*>(v.data()),
                    reinterpret_cast<const unsigned char*>(v.data() + v.size()));
    tensors.push_back(std::move(t));
  };
  add("model.embed_tokens.weight", "token_embd.weight", true);
  add("model.norm.weight", "output_norm.weight", false);
  if (!c.tie_word_embeddings) add("lm_head.weight", "output.weight", true);
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = fmt::format("model.layers.{}.", l), b = fmt::format("blk.{}.", l);
    add(p + "input_layernorm.weight", b + "attn_norm.weight", false);
    add(p + "self_attn.q_proj.weight", b + "attn_q.weight", true, c.num_attention_heads);
    add(p + "self_attn.k_proj.weight", b + "attn_k.weight", true, c.num_key_value_heads);
    add(p + "self_attn.v_proj.weight", b + "attn_v.weight", true);
    add(p + "self_attn.o_proj.weight", b + "attn_output.weight", true);
    add(p + "post_attention_layernorm.weight", b + "ffn_norm.weight", false);
    add(p + "mlp.gate_proj.weight", b + "ffn_gate.weight", true);
    add(p + "mlp.up_proj.weight", b + "ffn_up.weight", true);
    add(p + "mlp.down_proj.weight", b + "ffn_down.weight", true);
  }
  Writer w;
  w.raw("GGUF", 4);
  w.u32(3);
  w.u64(tensors.size());
  struct Kv {
    std::string key;
    KvType type;
    double value;
    std::string text;
  };
  const std::vector<Kv> kvs = {
      {"general.architecture", kString, 0, "llama"},
      {"llama.context_length", kUint32, 4096, ""},
      {"llama.embedding_length", kUint32, double(c.hidden_size), ""},
      {"llama.block_count", kUint32, double(c.num_hidden_layers), ""},
      {"llama.feed_forward_length", kUint32, double(c.intermediate_size), ""},
      {"llama.attention.head_count", kUint32, double(c.num_attention_heads), ""},
      {"llama.attention.head_count_kv", kUint32, double(c.num_key_value_heads), ""},
      {"llama.attention.key_length", kUint32, double(c.head_dim), ""},
      {"llama.attention.value_length", kUint32, double(c.head_dim), ""},
      {"llama.rope.dimension_count", kUint32, double(c.head_dim), ""},
      {"llama.rope.freq_base", kFloat32, c.rope.theta, ""},
      {"llama.attention.layer_norm_rms_epsilon", kFloat32, c.rms_norm_eps, ""},
      {"llama.vocab_size", kUint32, double(c.vocab_size), ""},
      {"tokenizer.ggml.model", kString, 0, "none"},
  };
  w.u64(kvs.size());
  for (const Kv& kv : kvs) {
    w.str(kv.key);
    w.u32(kv.type);
    if (kv.type == kString)
      w.str(kv.text);
    else if (kv.type == kUint32)
      w.u32(static_cast<std::uint32_t>(kv.value));
    else
      w.f32(static_cast<float>(kv.value));
  }
  constexpr std::size_t kAlign = 32;  // general.alignment's default
  std::uint64_t offset = 0;
  for (const Tensor& t : tensors) {
    w.str(t.name);
    w.u32(static_cast<std::uint32_t>(t.ne.size()));
    for (auto n : t.ne) w.u64(n);
    w.u32(t.type);
    w.u64(offset);
    offset += (t.data.size() + kAlign - 1) / kAlign * kAlign;
  }
  w.pad(kAlign);
  std::ofstream f(out, std::ios::binary);
  f.write(reinterpret_cast<const char*>(w.bytes().data()), static_cast<std::streamsize>(w.bytes().size()));
  for (const Tensor& t : tensors) {
    f.write(reinterpret_cast<const char*>(t.data.data()), static_cast<std::streamsize>(t.data.size()));
    const std::string zeros((kAlign - t.data.size() % kAlign) % kAlign, '\0');
    f.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
  }
  if (!f) throw std::runtime_error("gguf_from_model: cannot write " + out);
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  const std::vector<std::string> a(argv + 1, argv + argc);
  if (a.size() == 4 && a[0] == "--prompt") {
    const engine::Request r{0, std::stoi(a[1]), 1, 0};
    const auto ids = engine::make_prompt_ids({r}, std::stoi(a[2]), std::stoull(a[3]));
    for (int id : ids.at(0)) fmt::print("{} ", id);
    fmt::print("\n");
    return 0;
  }
  if (a.size() != 3 || (a[2] != "f32" && a[2] != "q8_0" && a[2] != "q4_0")) {
    fmt::print(stderr, "usage: gguf_from_model MODEL_DIR OUT.gguf f32|q8_0|q4_0\n"
                       "       gguf_from_model --prompt TOKENS VOCAB SEED\n");
    return 2;
  }
  return convert(a[0], a[1], a[2]);
} catch (const std::exception& e) {
  fmt::print(stderr, "gguf_from_model: {}\n", e.what());
  return 1;
}
