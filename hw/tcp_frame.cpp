#include "hw/tcp_frame.hpp"

#include <fmt/format.h>

#include <cstring>

namespace hw {

namespace {

constexpr std::uint32_t kMagic = 0x3146494d;  // "MIF1"
constexpr std::uint32_t kHasBytes = 1, kForward = 2, kRelayed = 4;

}  // namespace

std::array<char, kTcpHeaderBytes> encode_tcp_header(int tag, const engine::Payload& p, FrameRoute route) {
  std::array<char, kTcpHeaderBytes> h{};
  const std::uint32_t flags = (p.bytes.empty() ? 0 : kHasBytes) | (route.forward_to >= 0 ? kForward : 0) |
                              (route.relayed_from >= 0 ? kRelayed : 0);
  const std::int32_t t = tag, hop = route.hop();
  const std::uint64_t size = p.size;
  std::memcpy(h.data(), &kMagic, 4);
  std::memcpy(h.data() + 4, &flags, 4);
  std::memcpy(h.data() + 8, &t, 4);
  std::memcpy(h.data() + 12, &hop, 4);
  std::memcpy(h.data() + 16, &size, 8);
  return h;
}

TcpFrameHeader decode_tcp_header(const std::array<char, kTcpHeaderBytes>& bytes, std::uint64_t max_bytes, int world) {
  std::uint32_t magic, flags;
  std::int32_t tag, hop;
  TcpFrameHeader h;
  std::memcpy(&magic, bytes.data(), 4);
  std::memcpy(&flags, bytes.data() + 4, 4);
  std::memcpy(&tag, bytes.data() + 8, 4);
  std::memcpy(&hop, bytes.data() + 12, 4);
  std::memcpy(&h.size, bytes.data() + 16, 8);
  if (magic != kMagic) throw FrameError("frame without the meshinfer magic");
  if ((flags & ~(kHasBytes | kForward | kRelayed)) != 0 || (flags & kForward && flags & kRelayed))
    throw FrameError(fmt::format("frame with unknown flags {:#x}", flags));
  if (h.size > max_bytes)
    throw FrameError(fmt::format("frame claims a {}-byte message, over the {}-byte limit", h.size, max_bytes));
  if ((flags & (kForward | kRelayed)) != 0 && (hop < 0 || hop >= world))
    throw FrameError(fmt::format("frame routed through rank {}, not one of the {}", hop, world));
  h.tag = tag;
  h.has_bytes = (flags & kHasBytes) != 0;
  if (flags & kForward) h.route.forward_to = hop;
  if (flags & kRelayed) h.route.relayed_from = hop;
  return h;
}

}  // namespace hw
