#include "hw/verbs/verbs_frames.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace hw {

namespace {

constexpr std::uint32_t kFrameMagic = 0x3146564d;  // "MVF1"
constexpr std::uint32_t kHasBytes = 1, kCreditOnly = 2, kAsks = 4, kForward = 8, kRelayed = 16, kCloses = 32;
constexpr std::uint32_t kNotes = kAsks | kCloses, kRoute = kForward | kRelayed;

// Fixed little-endian layout: magic, flags, tag, chunk, credits, hop rank, size, sequence.
void write_header(std::span<std::byte> frame, std::uint32_t flags, std::int32_t tag, std::uint32_t chunk,
                  std::uint32_t credits, std::uint64_t message_bytes, std::uint64_t sequence, FrameRoute route = {}) {
  std::byte* p = frame.data();
  flags |= (route.forward_to >= 0 ? kForward : 0) | (route.relayed_from >= 0 ? kRelayed : 0);
  const std::int32_t hop = route.hop();
  std::memcpy(p + 0, &kFrameMagic, 4);
  std::memcpy(p + 4, &flags, 4);
  std::memcpy(p + 8, &tag, 4);
  std::memcpy(p + 12, &chunk, 4);
  std::memcpy(p + 16, &credits, 4);
  std::memcpy(p + 20, &hop, 4);
  std::memcpy(p + 24, &message_bytes, 8);
  std::memcpy(p + 32, &sequence, 8);
}

}  // namespace

void check_frame_stride(std::size_t stride) {
  if (stride < kMinFrameStride || stride > kMaxFrameStride || stride % kMinFrameStride != 0)
    throw std::invalid_argument(
        fmt::format("frame stride {} must be a multiple of 4 KiB between 4 KiB and 512 KiB", stride));
}

std::size_t frame_capacity(std::size_t stride) { return stride - kFrameHeaderBytes; }

std::uint64_t frames_for(std::uint64_t message_bytes, std::size_t stride) {
  const std::uint64_t cap = frame_capacity(stride);
  return std::max<std::uint64_t>(1, (message_bytes + cap - 1) / cap);
}

void pack_frame(std::span<std::byte> frame, int tag, const engine::Payload& message, std::uint64_t index,
                std::uint64_t sequence, std::uint32_t credits, FrameRoute route) {
  const std::uint64_t cap = frame_capacity(frame.size());
  const std::uint64_t begin = index * cap;
  const auto chunk = static_cast<std::uint32_t>(std::min(cap, message.size - std::min(message.size, begin)));
  const bool has_bytes = !message.bytes.empty();
  write_header(frame, has_bytes ? kHasBytes : 0, tag, chunk, credits, message.size, sequence, route);
  std::byte* body = frame.data() + kFrameHeaderBytes;
  if (has_bytes) std::memcpy(body, message.bytes.data() + begin, chunk);
  std::memset(body + (has_bytes ? chunk : 0), 0, cap - (has_bytes ? chunk : 0));
}

void pack_credit_frame(std::span<std::byte> frame, std::uint64_t sequence, std::uint32_t credits, CreditNote note) {
  const std::uint32_t flags = note == CreditNote::kAsk ? kAsks : note == CreditNote::kClose ? kCloses : 0;
  write_header(frame, kCreditOnly | flags, 0, 0, credits, 0, sequence);
  std::memset(frame.data() + kFrameHeaderBytes, 0, frame.size() - kFrameHeaderBytes);
}

FrameHeader read_frame_header(std::span<const std::byte> frame) {
  if (frame.size() < kFrameHeaderBytes)
    throw FrameError(fmt::format("frame of {} bytes is shorter than its header", frame.size()));
  const std::byte* p = frame.data();
  std::uint32_t magic, flags;
  std::int32_t hop;
  FrameHeader h;
  std::memcpy(&magic, p + 0, 4);
  std::memcpy(&flags, p + 4, 4);
  std::memcpy(&h.tag, p + 8, 4);
  std::memcpy(&h.chunk_bytes, p + 12, 4);
  std::memcpy(&h.credits, p + 16, 4);
  std::memcpy(&hop, p + 20, 4);
  std::memcpy(&h.message_bytes, p + 24, 8);
  std::memcpy(&h.sequence, p + 32, 8);
  if (magic != kFrameMagic) throw FrameError("frame without the meshinfer magic");
  // A note goes only on a credit frame, a route only on a message's frame, and one of each at most.
  const bool credit_only = (flags & kCreditOnly) != 0;
  if ((flags & ~(kHasBytes | kCreditOnly | kNotes | kRoute)) != 0 || (flags & kNotes) == kNotes ||
      (flags & kRoute) == kRoute || (!credit_only && (flags & kNotes)) || (credit_only && (flags & kRoute)))
    throw FrameError(fmt::format("frame with unknown flags {:#x}", flags));
  if ((flags & kRoute) && hop < 0) throw FrameError(fmt::format("frame routed through rank {}", hop));
  if (h.message_bytes > kMaxMessageBytes)
    throw FrameError(
        fmt::format("frame claims a {}-byte message, over the {}-byte limit", h.message_bytes, kMaxMessageBytes));
  h.has_bytes = (flags & kHasBytes) != 0;
  h.credit_only = (flags & kCreditOnly) != 0;
  h.asks = (flags & kAsks) != 0;
  h.closes = (flags & kCloses) != 0;
  if (flags & kForward) h.route.forward_to = hop;
  if (flags & kRelayed) h.route.relayed_from = hop;
  if (h.chunk_bytes > frame_capacity(frame.size()) || h.chunk_bytes > h.message_bytes)
    throw FrameError(fmt::format("frame claims {} bytes of a {}-byte message in a {}-byte stride", h.chunk_bytes,
                                 h.message_bytes, frame.size()));
  return h;
}

std::optional<std::pair<int, engine::Payload>> FrameAssembler::accept(const FrameHeader& h,
                                                                      std::span<const std::byte> frame) {
  if (h.sequence != next_sequence_)
    throw FrameError(
        fmt::format("frame {} arrived where frame {} was expected (a frame was lost)", h.sequence, next_sequence_));
  ++next_sequence_;
  if (h.credit_only) return std::nullopt;
  if (!in_message_) {
    in_message_ = true;
    first_ = h;
    got_ = 0;
    message_ = engine::Payload::sized(h.message_bytes);  // its bytes grow as frames bring them
  } else if (h.tag != first_.tag || h.message_bytes != first_.message_bytes || h.has_bytes != first_.has_bytes ||
             h.route != first_.route) {
    throw FrameError(fmt::format("frame of a {}-byte message with tag {} interrupts a {}-byte message with tag {}",
                                 h.message_bytes, h.tag, first_.message_bytes, first_.tag));
  }
  if (h.chunk_bytes > h.message_bytes - got_ || (h.chunk_bytes == 0 && h.message_bytes != 0))
    throw FrameError(fmt::format("frame carries {} bytes where {} remain", h.chunk_bytes, h.message_bytes - got_));
  if (h.has_bytes && h.chunk_bytes > 0) {
    // A header's claim reserves nothing: at most twice what has arrived, never more than the message.
    engine::Bytes& bytes = message_.bytes;
    if (bytes.capacity() < got_ + h.chunk_bytes)
      bytes.reserve(std::min(h.message_bytes, std::max<std::uint64_t>(2 * bytes.capacity(), got_ + h.chunk_bytes)));
    const std::size_t at = bytes.size();
    bytes.resize(at + h.chunk_bytes);
    std::memcpy(bytes.data() + at, frame.data() + kFrameHeaderBytes, h.chunk_bytes);
  }
  got_ += h.chunk_bytes;
  if (got_ < h.message_bytes) return std::nullopt;
  in_message_ = false;
  return std::make_pair(static_cast<int>(first_.tag), std::move(message_));
}

}  // namespace hw
