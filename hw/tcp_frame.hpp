// The header before every TcpRuntime message: magic, flags, tag, hop rank,
// length (24 bytes, little-endian), then the message's bytes (zeros for a
// size-only one). The hop rank serves a detour (hw/frame_route.hpp).
#pragma once

#include <array>
#include <cstdint>

#include "engine/base/runtime.hpp"
#include "hw/frame_route.hpp"
#include "hw/wire_limits.hpp"

namespace hw {

inline constexpr std::size_t kTcpHeaderBytes = 24;

struct TcpFrameHeader {
  int tag = 0;
  bool has_bytes = false;  // the message carries real bytes (else size only)
  std::uint64_t size = 0;
  FrameRoute route;
};

std::array<char, kTcpHeaderBytes> encode_tcp_header(int tag, const engine::Payload& p, FrameRoute route = {});
// Throws FrameError for a header that is not ours, has unknown flags, names a
// hop outside [0, world) or claims more than `max_bytes`.
TcpFrameHeader decode_tcp_header(const std::array<char, kTcpHeaderBytes>& bytes, std::uint64_t max_bytes, int world);

}  // namespace hw
