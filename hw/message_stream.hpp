// Messages as one byte stream, the form both real transports carry: each
// message is its 24-byte header (hw/tcp_frame.hpp) and then its bytes (zeros
// for a size-only payload). TCP writes the stream to a socket; verbs cuts it
// into frames, several small messages to a frame or one message over many
// (hw/verbs/verbs_frames.hpp). No verbs or socket dependency.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>

#include "engine/base/runtime.hpp"
#include "hw/frame_route.hpp"
#include "hw/tcp_frame.hpp"

namespace hw {

// One message on its way out, written a piece at a time.
struct OutMessage {
  OutMessage(int tag, engine::Payload payload, FrameRoute route = {});

  // Copies the next bytes of this message's stream into `to`; returns how many.
  std::size_t write_to(std::span<std::byte> to);
  std::uint64_t total() const { return header.size() + payload.size; }
  bool done() const { return written == total(); }

  std::array<char, kTcpHeaderBytes> header;
  engine::Payload payload;
  std::uint64_t written = 0;  // of total()
  int forwarded_for = -1;     // a relay forwards it for this rank (counted against that rank until written)
};

// Fills `to` from the front of `queue`, end to end, popping each message
// once written whole (after `written(message)`); returns the bytes written.
template <class Written>
std::size_t write_queue(std::deque<OutMessage>& queue, std::span<std::byte> to, Written written) {
  std::size_t used = 0;
  while (used < to.size() && !queue.empty()) {
    used += queue.front().write_to(to.subspan(used));
    if (!queue.front().done()) break;
    written(queue.front());
    queue.pop_front();
  }
  return used;
}

struct InMessage {
  TcpFrameHeader header;
  engine::Payload payload;
};

// Rebuilds messages from the stream, taken in pieces of any size.
class MessageReader {
 public:
  // Headers claiming more than `max_bytes`, or a hop outside [0, world), are malformed.
  MessageReader(std::uint64_t max_bytes, int world) : max_bytes_(max_bytes), world_(world) {}

  // Takes bytes from the front of `in` until it is used up or a message is
  // whole, and returns that message. Throws FrameError on a malformed header.
  // A header's claim reserves little: the buffer grows with what arrives.
  std::optional<InMessage> read(std::span<const std::byte>& in);
  // Where a transport may receive the rest of the message under way straight
  // into its buffer (a large one, no staging copy): empty unless it carries
  // bytes and at least `at_least` of them are still to come. The buffer grows
  // as read() grows it. After n bytes were written there, received(n) returns
  // the message once whole.
  std::span<std::byte> rest(std::uint64_t at_least);
  std::optional<InMessage> received(std::size_t n);
  // Bytes held for the message under way.
  std::size_t held_bytes() const { return bytes_.capacity(); }

 private:
  // The message under way once all its bytes came.
  std::optional<InMessage> finished();

  std::uint64_t max_bytes_;
  int world_;
  std::array<char, kTcpHeaderBytes> header_{};
  std::size_t header_got_ = 0;
  TcpFrameHeader message_;  // once header_ is whole
  std::uint64_t got_ = 0;
  engine::Bytes bytes_;
};

}  // namespace hw
