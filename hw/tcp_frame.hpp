// The header before every TcpRuntime message: magic, flags, tag, hop rank,
// length (24 bytes, little-endian), then the message's bytes (zeros for a
// size-only one). The hop rank serves a detour: a frame to forward names its
// destination, a forwarded one its origin.
#pragma once

#include <array>
#include <cstdint>

#include "engine/runtime.hpp"
#include "hw/wire_limits.hpp"

namespace hw {

inline constexpr std::size_t kTcpHeaderBytes = 24;

// At most one of the two is set.
struct TcpRoute {
  int forward_to = -1;    // the receiver relays the message to this rank
  int relayed_from = -1;  // the receiver relayed it; this rank sent it
};

struct TcpFrameHeader {
  int tag = 0;
  bool has_bytes = false;  // the message carries real bytes (else size only)
  std::uint64_t size = 0;
  TcpRoute route;
};

std::array<char, kTcpHeaderBytes> encode_tcp_header(int tag, const engine::Payload& p, TcpRoute route = {});
// Throws FrameError for a header that is not ours, has unknown flags, names a
// hop outside [0, world) or claims more than `max_bytes`.
TcpFrameHeader decode_tcp_header(const std::array<char, kTcpHeaderBytes>& bytes, std::uint64_t max_bytes, int world);

}  // namespace hw
