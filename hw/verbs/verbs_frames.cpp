#include "hw/verbs/verbs_frames.hpp"

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>

namespace hw {

namespace {

constexpr std::uint32_t kFrameMagic = 0x3246564d;  // "MVF2": the stream form (MVF1 had a message per frame)
constexpr std::uint32_t kAsks = 1, kCloses = 2;

}  // namespace

void check_frame_stride(std::size_t stride) {
  if (stride < kMinFrameStride || stride > kMaxFrameStride || stride % kMinFrameStride != 0)
    throw std::invalid_argument(
        fmt::format("frame stride {} must be a multiple of 4 KiB between 4 KiB and 512 KiB", stride));
}

std::size_t frame_capacity(std::size_t stride) { return stride - kFrameHeaderBytes; }

// Fixed little-endian layout: magic, flags, credits, used, sequence.
void write_frame_header(std::span<std::byte> frame, const FrameHeader& h) {
  const std::uint32_t flags = (h.asks ? kAsks : 0) | (h.closes ? kCloses : 0);
  std::byte* p = frame.data();
  std::memcpy(p + 0, &kFrameMagic, 4);
  std::memcpy(p + 4, &flags, 4);
  std::memcpy(p + 8, &h.credits, 4);
  std::memcpy(p + 12, &h.used, 4);
  std::memcpy(p + 16, &h.sequence, 8);
}

FrameHeader read_frame_header(std::span<const std::byte> frame) {
  if (frame.size() < kFrameHeaderBytes)
    throw FrameError(fmt::format("frame of {} bytes is shorter than its header", frame.size()));
  const std::byte* p = frame.data();
  std::uint32_t magic, flags;
  FrameHeader h;
  std::memcpy(&magic, p + 0, 4);
  std::memcpy(&flags, p + 4, 4);
  std::memcpy(&h.credits, p + 8, 4);
  std::memcpy(&h.used, p + 12, 4);
  std::memcpy(&h.sequence, p + 16, 8);
  if (magic != kFrameMagic) throw FrameError("frame without the meshinfer magic");
  if ((flags & ~(kAsks | kCloses)) != 0) throw FrameError(fmt::format("frame with unknown flags {:#x}", flags));
  if (h.used > frame_capacity(frame.size()))
    throw FrameError(fmt::format("frame claims {} bytes of messages in a {}-byte stride", h.used, frame.size()));
  h.asks = (flags & kAsks) != 0;
  h.closes = (flags & kCloses) != 0;
  return h;
}

}  // namespace hw
