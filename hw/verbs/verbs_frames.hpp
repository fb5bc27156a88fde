// Fixed-stride frames for two-sided SEND/RECV: a SEND and its RECV must cover
// the same number of frames (docs/reference-facts.md#macos-rdma-over-thunderbolt), so every frame is
// exactly `stride` bytes: a header, then up to stride - kFrameHeaderBytes
// bytes of the peer's message stream (hw/message_stream.hpp), then whatever
// the ring held. A message may start in one frame and end many frames later,
// and one frame may carry many small messages. No verbs dependency.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "hw/wire_limits.hpp"

namespace hw {

inline constexpr std::size_t kFrameHeaderBytes = 24;
inline constexpr std::size_t kMinFrameStride = 4096;        // macOS 26.2
inline constexpr std::size_t kMaxFrameStride = 512 * 1024;  // macOS 26.3+

struct FrameHeader {
  bool asks = false;           // the sender waits on us and has heard nothing: answer with any frame
  bool closes = false;         // the sender's last frame to us: it closed its runtime
  std::uint32_t credits = 0;   // receive slots the sender has reposted for us
  std::uint32_t used = 0;      // bytes of the message stream in this frame (0: only credits and notes)
  std::uint64_t sequence = 0;  // per direction, counts every frame
};

// Throws std::invalid_argument unless stride is a multiple of 4 KiB in [4 KiB, 512 KiB].
void check_frame_stride(std::size_t stride);
std::size_t frame_capacity(std::size_t stride);

// REQUIRES: frame.size() >= kFrameHeaderBytes.
void write_frame_header(std::span<std::byte> frame, const FrameHeader& h);
// Throws FrameError when the frame is not one of ours, has unknown flags or
// claims more stream bytes than its stride holds.
FrameHeader read_frame_header(std::span<const std::byte> frame);

}  // namespace hw
