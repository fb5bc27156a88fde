// What a model, hardware or link card says (scenarios/catalog/*/NAME.json), and
// what a link card's wire does to a message's size. Loading and checking the
// cards is catalog.hpp's; what follows from a model card is model_math.hpp's.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace engine {

struct Quantization {
  std::string name;        // "bf16", "fp16", "8bit", "4bit", "q4_k_m", "int4"
  double bits_per_weight;  // effective, including group scales; the average over all weights
  // Mixed quants (MoE): every weight but the routed experts' at this width, the
  // experts at what keeps the average (model_math's routed_expert_bits); 0: one width for all.
  double dense_bits_per_weight = 0;
};

// Multi-head latent attention (DeepSeek-V3 family). Absent for GQA models.
struct MlaShape {
  int q_lora_rank = 0;  // 0: queries projected directly from hidden
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
};

struct MoeShape {
  int experts = 0;         // routed experts per MoE layer
  int active_experts = 0;  // top-k
  int shared_experts = 0;
  int expert_ffn = 0;    // intermediate size of one expert
  int dense_layers = 0;  // leading layers with a dense FFN instead of MoE
};

struct ModelCard {
  std::string name;
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
  int ffn = 0;  // dense FFN intermediate size (dense layers)
  int vocab = 0;
  bool tied_embeddings = false;
  std::optional<MoeShape> moe;
  std::optional<MlaShape> mla;
  double kv_bytes_per_element = 2.0;  // KV cache kept in 16-bit
  std::vector<Quantization> quantizations;

  const Quantization& quant(const std::string& name) const;  // throws std::out_of_range
  bool is_moe_layer(int layer) const { return moe && layer >= moe->dense_layers; }
};

struct HardwareCard {
  std::string name;
  double memory_bytes = 0;
  double usable_memory_fraction = 0;  // what the GPU may wire for weights and KV
  double memory_bandwidth = 0;        // bytes/s
  double peak_flops = 0;              // FP16 FLOP/s
  // Ports that take a point-to-point cable, by kind ("thunderbolt", "qsfp"):
  // for an M3 Ultra, 5 of its 6 Thunderbolt 5 ports are usable for RDMA.
  std::map<std::string, int> ports;
  double ssd_read_bandwidth = 0;  // bytes/s
  double idle_watts = 0;
  double loaded_watts = 0;
  double price_usd = 0;
  double boot_s = 0;  // power-on to serving
};

// A message of `bytes` spends `seconds` on a link's wire beyond the card's
// latency, which holds a small message's (measured by `meshinfer probe`).
struct WireTime {
  double bytes = 0;
  double seconds = 0;
};

struct LinkCard {
  std::string name;
  double bandwidth = 0;               // effective bytes/s, each direction
  double latency_s = 0;               // one-way wire + stack latency
  double per_message_overhead_s = 0;  // software cost per message at the sender
  double frame_bytes = 0;             // a frame's payload; messages are padded to whole frames, but
  double frame_header_bytes = 0;      // on a byte stream (TCP) each frame carries these headers instead
  std::string port_kind;              // "thunderbolt", "qsfp", "ethernet"
  bool switched = false;              // one NIC per node into a switch (Ethernet):
                                      // no port limit, the node's NIC is shared
  // Where small messages cross faster or slower than bulk (a shaper's burst, a
  // NIC's inline sends): measured points, sizes increasing, times not
  // decreasing. Empty: every message at `bandwidth`.
  std::vector<WireTime> wire_time_by_size;
};

// Bytes of goodput a message of `size` takes on `card`'s wire: padded to whole
// frames, one at least; on a byte stream, its size and each frame's headers.
double wire_bytes(const LinkCard& card, double size);
// The bytes that take, at the card's `bandwidth`, as long as a message of
// `size` takes on its wire: its wire bytes, or with a `wire_time_by_size`,
// its time interpolated between the measured sizes (below the first, in
// proportion to its wire bytes; beyond the last, each further byte at
// `bandwidth`).
double timed_bytes(const LinkCard& card, double size);

}  // namespace engine
