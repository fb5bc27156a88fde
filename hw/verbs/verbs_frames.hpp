// Messages cut into fixed-stride frames for two-sided SEND/RECV: a SEND and
// its RECV must cover the same number of frames (REFERENCE.md, macOS RDMA), so
// every frame is exactly `stride` bytes: a header, then up to
// stride - kFrameHeaderBytes bytes of the message, then padding. A message on
// a detour carries its route (hw/frame_route.hpp). No verbs dependency.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>

#include "engine/runtime.hpp"
#include "hw/frame_route.hpp"
#include "hw/wire_limits.hpp"

namespace hw {

inline constexpr std::size_t kFrameHeaderBytes = 40;
inline constexpr std::size_t kMinFrameStride = 4096;        // macOS 26.2
inline constexpr std::size_t kMaxFrameStride = 512 * 1024;  // macOS 26.3+

struct FrameHeader {
  bool has_bytes = false;    // the message carries real bytes (else size only)
  bool credit_only = false;  // no message content: only returns credits
  bool asks = false;         // the sender waits on us and has heard nothing: answer with any frame
  bool closes = false;       // the sender's last frame to us: it closed its runtime
  std::int32_t tag = 0;
  std::uint32_t chunk_bytes = 0;  // message bytes in this frame
  std::uint32_t credits = 0;      // receive slots the sender has reposted for us
  std::uint64_t message_bytes = 0;
  std::uint64_t sequence = 0;  // per direction, counts every frame
  FrameRoute route;            // the same in every frame of a message
};

// What a frame without message content says besides its credits.
enum class CreditNote { kNone, kAsk, kClose };

// Throws std::invalid_argument unless stride is a multiple of 4 KiB in [4 KiB, 512 KiB].
void check_frame_stride(std::size_t stride);
std::size_t frame_capacity(std::size_t stride);
// Frames a message of `message_bytes` needs (at least one, even when empty).
std::uint64_t frames_for(std::uint64_t message_bytes, std::size_t stride);

// Writes frame `index` of `message` into `frame` (stride bytes, zero-padded).
// REQUIRES: index < frames_for(message.size, frame.size()).
void pack_frame(std::span<std::byte> frame, int tag, const engine::Payload& message, std::uint64_t index,
                std::uint64_t sequence, std::uint32_t credits, FrameRoute route = {});
// A frame that only returns credits, and asks for a frame in return or says
// it is the last (FrameHeader::asks, FrameHeader::closes).
void pack_credit_frame(std::span<std::byte> frame, std::uint64_t sequence, std::uint32_t credits,
                       CreditNote note = CreditNote::kNone);
// Throws FrameError when the frame is not one of ours, has unknown flags,
// claims more than its stride or kMaxMessageBytes, or routes through a negative rank.
FrameHeader read_frame_header(std::span<const std::byte> frame);

// Rebuilds one peer's messages from its frames, in order.
class FrameAssembler {
 public:
  // Consumes one received frame (stride bytes). Returns the message it
  // completes, with its tag (its route is the completing frame's). Throws
  // FrameError on a gap in the sequence or a frame that does not continue the
  // message under way.
  std::optional<std::pair<int, engine::Payload>> accept(const FrameHeader& h, std::span<const std::byte> frame);
  // Bytes held for the message under way: at most twice what its frames brought, whatever its header claims.
  std::size_t held_bytes() const { return message_.bytes.capacity(); }

 private:
  std::uint64_t next_sequence_ = 0;
  bool in_message_ = false;
  FrameHeader first_;
  std::uint64_t got_ = 0;
  engine::Payload message_;
};

}  // namespace hw
