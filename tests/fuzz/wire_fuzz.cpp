// libFuzzer target: whatever bytes a peer or a stranger sends, the decoders
// of the wire refuse them with their own error (FrameError,
// std::invalid_argument, a malformed node report) or return what they
// claim, bounded. The first byte picks the decoder. Any other exception, a
// crash, a sanitizer report or an allocation over libFuzzer's -rss_limit_mb
// is a finding. bench/fuzz.sh wire builds and runs it.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <vector>

#include "engine/node/epoch_runtime.hpp"
#include "engine/node/liveness.hpp"
#include "hw/handshake.hpp"
#include "hw/message_stream.hpp"
#include "hw/node_result_codec.hpp"
#include "hw/tcp_frame.hpp"
#include "hw/verbs/verbs_frames.hpp"

namespace {

constexpr std::size_t kStride = hw::kMinFrameStride;

// The bytes as a run of verbs frames from one peer, the way VerbsRuntime reads them.
void verbs_frames(std::span<const std::uint8_t> in) {
  hw::MessageReader reader(hw::kMaxMessageBytes, 8);
  std::vector<std::byte> frame(kStride);
  for (std::size_t at = 0; at < in.size(); at += kStride) {
    std::fill(frame.begin(), frame.end(), std::byte{0});
    std::memcpy(frame.data(), in.data() + at, std::min(kStride, in.size() - at));
    const hw::FrameHeader h = hw::read_frame_header(frame);
    for (auto stream = std::span<const std::byte>(frame).subspan(hw::kFrameHeaderBytes, h.used); !stream.empty();)
      if (auto message = reader.read(stream))
        if (message->payload.size > hw::kMaxMessageBytes) __builtin_trap();
  }
}

void decode(std::uint8_t which, std::span<const std::uint8_t> in) {
  const std::vector<std::byte> bytes(reinterpret_cast<const std::byte*>(in.data()),
                                     reinterpret_cast<const std::byte*>(in.data() + in.size()));
  switch (which % 6) {
    case 0: {
      std::array<char, hw::kTcpHeaderBytes> header{};
      std::memcpy(header.data(), in.data(), std::min(in.size(), header.size()));
      constexpr int kWorld = 8;
      const hw::TcpFrameHeader h = hw::decode_tcp_header(header, hw::kMaxMessageBytes, kWorld);
      if (h.size > hw::kMaxMessageBytes || h.route.forward_to >= kWorld || h.route.relayed_from >= kWorld)
        __builtin_trap();
      break;
    }
    case 1:
      verbs_frames(in);
      break;
    case 2:
      engine::ControlMessage::decode(engine::Payload::of(bytes), 1 + (in.empty() ? 0 : in[0] % 8));
      break;
    case 3: {
      std::vector<char> hello(hw::kHelloBytes, 0);
      std::memcpy(hello.data(), in.data(), std::min(in.size(), hello.size()));
      hw::decode_hello(hello.data());
      break;
    }
    case 4:
      hw::decode_node_report(engine::Payload::of(bytes));
      break;
    default:
      engine::Heartbeat::decode(engine::Payload::of(bytes), 1 + (in.empty() ? 0 : in[0] % 8), 0);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  try {
    decode(data[0], {data + 1, size - 1});
  } catch (const hw::FrameError&) {
  } catch (const std::invalid_argument&) {
  } catch (const std::runtime_error& e) {  // decode_node_report's one refusal
    if (std::strncmp(e.what(), "malformed node report", 21) != 0) throw;
  }
  return 0;
}
