// The message stream cut into fixed-stride frames and read back, at the
// strides macOS allows, for sizes at every edge of a frame, and what a frame
// header may claim.
#include "hw/verbs/verbs_frames.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <tuple>
#include <vector>

#include "hw/message_stream.hpp"

namespace {

engine::Payload patterned(std::uint64_t n) {
  std::vector<std::byte> bytes(n);
  for (std::uint64_t i = 0; i < n; ++i) bytes[i] = static_cast<std::byte>((i * 131 + (i >> 12)) & 0xff);
  return engine::Payload::of(bytes);
}

struct Received {
  std::vector<hw::InMessage> messages;
  std::uint64_t frames = 0;
};

// Packs `queue` into frames of `stride` as VerbsRuntime does, checks each
// frame's header, and reads the messages back from the frames' stream bytes.
Received through_frames(std::deque<hw::OutMessage> queue, std::size_t stride) {
  Received r;
  hw::MessageReader reader(hw::kMaxMessageBytes, 4);
  std::vector<std::byte> frame(stride);
  while (!queue.empty()) {
    const std::size_t used = hw::write_queue(queue, std::span(frame).subspan(hw::kFrameHeaderBytes), [](auto&) {});
    hw::write_frame_header(frame, {.credits = 3, .used = static_cast<std::uint32_t>(used), .sequence = r.frames});
    const hw::FrameHeader h = hw::read_frame_header(frame);
    EXPECT_EQ(h.sequence, r.frames);
    EXPECT_EQ(h.credits, 3u);
    ++r.frames;
    for (auto stream = std::span<const std::byte>(frame).subspan(hw::kFrameHeaderBytes, h.used); !stream.empty();)
      if (auto m = reader.read(stream)) r.messages.push_back(std::move(*m));
  }
  return r;
}

std::deque<hw::OutMessage> one(int tag, const engine::Payload& p, hw::FrameRoute route = {}) {
  std::deque<hw::OutMessage> q;
  q.emplace_back(tag, p, route);
  return q;
}

class FrameRoundTrip : public testing::TestWithParam<std::tuple<std::size_t, std::uint64_t>> {};

TEST_P(FrameRoundTrip, EveryByteArrivesInAsFewFramesAsItsStreamNeeds) {
  const auto [stride, size_code] = GetParam();
  const std::uint64_t cap = hw::frame_capacity(stride);
  const std::uint64_t header = hw::kTcpHeaderBytes;
  // size_code: 0 bytes, then a stream of cap - 1, cap, cap + 1, 3 * cap bytes, or an absolute size.
  const std::uint64_t size = size_code == 0   ? 0
                             : size_code == 1 ? cap - 1 - header
                             : size_code == 2 ? cap - header
                             : size_code == 3 ? cap + 1 - header
                             : size_code == 4 ? 3 * cap - header
                                              : size_code;
  const engine::Payload message = patterned(size);
  const Received r = through_frames(one(42, message), stride);
  EXPECT_EQ(r.frames, (header + size + cap - 1) / cap);
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0].header.tag, 42);
  EXPECT_EQ(r.messages[0].payload.size, size);
  EXPECT_TRUE(r.messages[0].payload.bytes == message.bytes) << "content differs";
}

std::string round_trip_name(const testing::TestParamInfo<std::tuple<std::size_t, std::uint64_t>>& info) {
  static const char* edges[] = {"empty", "cap_minus_1", "cap", "cap_plus_1", "three_caps"};
  const auto [stride, code] = info.param;
  return std::to_string(stride / 1024) + "KiB_" + (code < 5 ? edges[code] : std::to_string(code) + "B");
}

INSTANTIATE_TEST_SUITE_P(Strides, FrameRoundTrip,
                         testing::Combine(testing::Values(4096, 16384, 512 * 1024),
                                          testing::Values(0, 1, 2, 3, 4, 64ull << 20)),
                         round_trip_name);

// What makes a 4 KiB message cost one 4 KiB frame, not two: messages are packed
// end to end, so a stream of them fills every frame but the last.
TEST(Frames, MessagesArePackedEndToEndAcrossFrames) {
  std::deque<hw::OutMessage> q;
  std::vector<engine::Payload> sent;
  for (int i = 0; i < 100; ++i) {
    sent.push_back(patterned(i % 3 == 0 ? 4096 : i % 3 == 1 ? 8 : 0));
    q.emplace_back(i, sent.back());
  }
  std::uint64_t stream = 0;
  for (const auto& p : sent) stream += hw::kTcpHeaderBytes + p.size;
  const Received r = through_frames(std::move(q), 4096);
  EXPECT_EQ(r.frames, (stream + hw::frame_capacity(4096) - 1) / hw::frame_capacity(4096));
  ASSERT_EQ(r.messages.size(), sent.size());
  for (std::size_t i = 0; i < sent.size(); ++i) {
    EXPECT_EQ(r.messages[i].header.tag, static_cast<int>(i));
    EXPECT_TRUE(r.messages[i].payload.bytes == sent[i].bytes) << "message " << i;
  }
}

TEST(Frames, SizeOnlyPayloadsArriveWithTheirSizeAndNoBytes) {
  const Received r = through_frames(one(7, engine::Payload::sized(10000)), 4096);
  EXPECT_EQ(r.frames, 3u);  // its zeros cross the wire
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0].payload.size, 10000u);
  EXPECT_TRUE(r.messages[0].payload.bytes.empty());
}

TEST(Frames, ADetouredMessageCarriesItsRoute) {
  const Received r = through_frames(one(4, patterned(10000), {.forward_to = 2}), 4096);
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0].header.route, hw::FrameRoute{.forward_to = 2});
}

TEST(Frames, AFrameWithoutMessagesCarriesCreditsAndNotes) {
  std::vector<std::byte> frame(4096);
  hw::write_frame_header(frame, {.asks = true, .credits = 17, .sequence = 5});
  hw::FrameHeader h = hw::read_frame_header(frame);
  EXPECT_TRUE(h.asks);
  EXPECT_FALSE(h.closes);
  EXPECT_EQ(h.credits, 17u);
  EXPECT_EQ(h.used, 0u);
  EXPECT_EQ(h.sequence, 5u);
  hw::write_frame_header(frame, {.closes = true, .used = 100});
  h = hw::read_frame_header(frame);
  EXPECT_TRUE(h.closes && !h.asks);
  EXPECT_EQ(h.used, 100u);
}

// Found by bench/fuzz.sh wire: a header claiming an 822 MB message made the
// receiver allocate all of it before any of it arrived.
TEST(Frames, AHeaderClaimingAHugeMessageReservesOnlyWhatItsBytesBring) {
  engine::Payload claim = engine::Payload::sized(0x31000008);  // 822 MB, under the 1 GiB cap
  claim.bytes.resize(1);                                       // a header that says "has bytes"
  const auto header = hw::encode_tcp_header(5, claim);
  std::vector<std::byte> stream(header.size() + 8);
  std::memcpy(stream.data(), header.data(), header.size());
  hw::MessageReader reader(hw::kMaxMessageBytes, 4);
  std::span<const std::byte> in(stream);
  EXPECT_FALSE(reader.read(in).has_value());
  EXPECT_LE(reader.held_bytes(), std::size_t{1} << 20);

  // A real 64 MiB message: the buffer grows with what arrives and ends at exactly its size.
  hw::MessageReader growing(hw::kMaxMessageBytes, 4);
  const engine::Payload big = patterned(64ull << 20);
  std::deque<hw::OutMessage> q = one(5, big);
  std::vector<std::byte> chunk(512 * 1024);
  std::uint64_t fed = 0;
  std::optional<hw::InMessage> out;
  while (!q.empty()) {
    const std::size_t n = hw::write_queue(q, chunk, [](auto&) {});
    fed += n;
    std::span<const std::byte> piece(chunk.data(), n);
    out = growing.read(piece);
    EXPECT_TRUE(piece.empty());
    if (!out) {
      ASSERT_LE(growing.held_bytes(), std::max<std::uint64_t>(2 * fed, 1 << 20)) << "after " << fed;
    }
  }
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->payload.bytes.capacity(), big.size);
  EXPECT_TRUE(out->payload.bytes == big.bytes);
}

// TCP receives the rest of a large message straight into the reader's buffer.
TEST(Frames, TheRestOfALargeMessageIsReceivedStraightIntoItsBuffer) {
  const engine::Payload big = patterned((8ull << 20) + 5);
  std::deque<hw::OutMessage> q = one(9, big);
  std::vector<std::byte> stream(big.size + hw::kTcpHeaderBytes);
  ASSERT_EQ(hw::write_queue(q, stream, [](auto&) {}), stream.size());
  hw::MessageReader reader(hw::kMaxMessageBytes, 4);
  std::span<const std::byte> head(stream.data(), hw::kTcpHeaderBytes + 1000);
  ASSERT_FALSE(reader.read(head).has_value());
  std::uint64_t fed = 1000;
  std::optional<hw::InMessage> out;
  while (!out) {
    const std::span<std::byte> rest = reader.rest(64 * 1024);
    ASSERT_FALSE(rest.empty()) << "after " << fed;
    ASSERT_LE(reader.held_bytes(), std::max<std::uint64_t>(2 * (fed + 64 * 1024), 1 << 20));
    // What one recv() brings: less than offered, except at the end.
    const std::size_t n = std::min<std::size_t>(rest.size(), std::min<std::uint64_t>(300000, big.size - fed));
    std::memcpy(rest.data(), stream.data() + hw::kTcpHeaderBytes + fed, n);
    fed += n;
    out = reader.received(n);
    if (!out && big.size - fed < 64 * 1024) {  // too little left to offer: the rest comes through read()
      EXPECT_TRUE(reader.rest(64 * 1024).empty());
      std::span<const std::byte> tail(stream.data() + hw::kTcpHeaderBytes + fed, big.size - fed);
      out = reader.read(tail);
      ASSERT_TRUE(out.has_value());
    }
  }
  EXPECT_EQ(out->header.tag, 9);
  EXPECT_TRUE(out->payload.bytes == big.bytes);

  hw::MessageReader sized(hw::kMaxMessageBytes, 4);  // a size-only message has no buffer to offer
  std::deque<hw::OutMessage> zeros = one(3, engine::Payload::sized(1 << 20));
  std::vector<std::byte> header(hw::kTcpHeaderBytes);
  hw::write_queue(zeros, header, [](auto&) {});
  std::span<const std::byte> in(header);
  EXPECT_FALSE(sized.read(in).has_value());
  EXPECT_TRUE(sized.rest(1).empty());
}

TEST(Frames, ForeignOrOverlongFramesAreRefused) {
  std::vector<std::byte> frame(4096);
  hw::write_frame_header(frame, {.used = 100});
  frame[0] = std::byte{0};
  EXPECT_THROW(hw::read_frame_header(frame), hw::FrameError);
  hw::write_frame_header(frame, {.used = 4096 - hw::kFrameHeaderBytes + 1});
  EXPECT_THROW(hw::read_frame_header(frame), hw::FrameError);
  hw::write_frame_header(frame, {});
  frame[4] |= std::byte{8};  // an unknown flag
  EXPECT_THROW(hw::read_frame_header(frame), hw::FrameError);
}

TEST(Frames, AMalformedMessageHeaderInTheStreamIsRefused) {
  std::vector<std::byte> stream(hw::kTcpHeaderBytes);
  const auto header = hw::encode_tcp_header(1, patterned(10), {.forward_to = 3});
  std::memcpy(stream.data(), header.data(), header.size());
  hw::MessageReader reader(hw::kMaxMessageBytes, 3);  // rank 3 is not in a world of 3
  std::span<const std::byte> in(stream);
  EXPECT_THROW(reader.read(in), hw::FrameError);
}

TEST(Frames, StrideMustBeAMultipleOf4KiBUpTo512KiB) {
  EXPECT_NO_THROW(hw::check_frame_stride(4096));
  EXPECT_NO_THROW(hw::check_frame_stride(512 * 1024));
  EXPECT_THROW(hw::check_frame_stride(2048), std::invalid_argument);
  EXPECT_THROW(hw::check_frame_stride(6000), std::invalid_argument);
  EXPECT_THROW(hw::check_frame_stride(1024 * 1024), std::invalid_argument);
}

}  // namespace
