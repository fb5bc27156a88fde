// Messages cut into fixed-stride frames and put back together, at the strides
// macOS allows, for sizes at every edge of a frame.
#include "hw/verbs/verbs_frames.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <tuple>
#include <vector>

namespace {

engine::Payload patterned(std::uint64_t n) {
  std::vector<std::byte> bytes(n);
  for (std::uint64_t i = 0; i < n; ++i) bytes[i] = static_cast<std::byte>((i * 131 + (i >> 12)) & 0xff);
  return engine::Payload::of(bytes);
}

// Packs `message` into frames of `stride` and feeds them to `assembler`;
// returns the frames and what came out.
struct Sent {
  std::vector<std::vector<std::byte>> frames;
  std::optional<std::pair<int, engine::Payload>> received;
};

Sent send_through(hw::FrameAssembler& assembler, std::size_t stride, int tag, const engine::Payload& message,
                  std::uint64_t first_sequence) {
  Sent s;
  const std::uint64_t n = hw::frames_for(message.size, stride);
  std::vector<std::byte> frame(stride);
  for (std::uint64_t i = 0; i < n; ++i) {
    hw::pack_frame(frame, tag, message, i, first_sequence + i, 0);
    if (i < 2 || i + 1 == n) s.frames.push_back(frame);  // enough to inspect; 64 MiB has 16k frames
    auto out = assembler.accept(hw::read_frame_header(frame), frame);
    if (i + 1 < n)
      EXPECT_FALSE(out.has_value()) << "message completed early at frame " << i;
    else
      s.received = std::move(out);
  }
  return s;
}

class FrameRoundTrip : public testing::TestWithParam<std::tuple<std::size_t, std::uint64_t>> {};

TEST_P(FrameRoundTrip, EveryByteArrivesInFramesOfExactlyTheStride) {
  const auto [stride, size_code] = GetParam();
  const std::uint64_t cap = stride - hw::kFrameHeaderBytes;
  // size_code: 0 bytes, then cap - 1, cap, cap + 1, 3 * cap (a multiple), or an absolute size.
  const std::uint64_t size = size_code == 1   ? cap - 1
                             : size_code == 2 ? cap
                             : size_code == 3 ? cap + 1
                             : size_code == 4 ? 3 * cap
                                              : size_code;
  const engine::Payload message = patterned(size);
  hw::FrameAssembler assembler;
  const Sent s = send_through(assembler, stride, 42, message, 0);
  EXPECT_EQ(hw::frames_for(size, stride), std::max<std::uint64_t>(1, (size + cap - 1) / cap));
  ASSERT_TRUE(s.received.has_value());
  EXPECT_EQ(s.received->first, 42);
  EXPECT_EQ(s.received->second.size, size);
  EXPECT_TRUE(s.received->second.bytes == message.bytes) << "content differs";
  // The last frame is padded with zeros to the full stride.
  const std::vector<std::byte>& last = s.frames.back();
  ASSERT_EQ(last.size(), stride);
  const std::uint32_t used = hw::read_frame_header(last).chunk_bytes;
  for (std::size_t i = hw::kFrameHeaderBytes + used; i < stride; ++i) ASSERT_EQ(last[i], std::byte{0}) << "at " << i;
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

TEST(Frames, SizeOnlyPayloadsArriveWithTheirSizeAndNoBytes) {
  hw::FrameAssembler assembler;
  const Sent s = send_through(assembler, 4096, 7, engine::Payload::sized(10000), 0);
  ASSERT_TRUE(s.received.has_value());
  EXPECT_EQ(s.received->second.size, 10000u);
  EXPECT_TRUE(s.received->second.bytes.empty());
}

TEST(Frames, MessagesFollowOneAnotherOnTheSameSequence) {
  hw::FrameAssembler assembler;
  const engine::Payload a = patterned(5000), b = patterned(3);
  const Sent first = send_through(assembler, 4096, 1, a, 0);
  const Sent second = send_through(assembler, 4096, 2, b, hw::frames_for(a.size, 4096));
  ASSERT_TRUE(first.received && second.received);
  EXPECT_EQ(second.received->first, 2);
  EXPECT_TRUE(second.received->second.bytes == b.bytes);
}

TEST(Frames, CreditFramesCarryCreditsAndNoMessage) {
  std::vector<std::byte> frame(4096);
  hw::pack_credit_frame(frame, 0, 17);
  const hw::FrameHeader h = hw::read_frame_header(frame);
  EXPECT_TRUE(h.credit_only);
  EXPECT_FALSE(h.asks || h.closes);
  EXPECT_EQ(h.credits, 17u);
  hw::FrameAssembler assembler;
  EXPECT_FALSE(assembler.accept(h, frame).has_value());
  // It still took sequence number 0: the next message starts at 1.
  EXPECT_TRUE(send_through(assembler, 4096, 3, patterned(10), 1).received.has_value());
}

// A receiver that hears nothing asks for a frame on a credit frame; only a credit frame may ask.
TEST(Frames, OnlyACreditFrameAsksForAFrameInReturn) {
  std::vector<std::byte> frame(4096);
  hw::pack_credit_frame(frame, 5, 2, hw::CreditNote::kAsk);
  const hw::FrameHeader h = hw::read_frame_header(frame);
  EXPECT_TRUE(h.credit_only && h.asks);
  EXPECT_EQ(h.sequence, 5u);
  hw::pack_frame(frame, 1, patterned(10), 0, 6, 0);
  frame[4] |= std::byte{4};  // the ask flag on a data frame
  EXPECT_THROW(hw::read_frame_header(frame), hw::FrameError);
}

// A detour's route travels in every frame of the message; one frame with
// another route cannot continue it, and only a message's frames are routed.
TEST(Frames, EveryFrameOfADetouredMessageCarriesItsRoute) {
  const engine::Payload m = patterned(10000);  // three frames at 4 KiB
  std::vector<std::byte> frame(4096);
  hw::FrameAssembler assembler;
  std::optional<std::pair<int, engine::Payload>> out;
  for (std::uint64_t i = 0; i < 3; ++i) {
    hw::pack_frame(frame, 4, m, i, i, 0, {.forward_to = 2});
    const hw::FrameHeader h = hw::read_frame_header(frame);
    EXPECT_EQ(h.route, hw::FrameRoute{.forward_to = 2}) << "frame " << i;
    out = assembler.accept(h, frame);
  }
  ASSERT_TRUE(out.has_value());
  EXPECT_TRUE(out->second.bytes == m.bytes);

  hw::FrameAssembler switching;
  hw::pack_frame(frame, 4, m, 0, 0, 0, {.relayed_from = 1});
  EXPECT_EQ(hw::read_frame_header(frame).route.relayed_from, 1);
  switching.accept(hw::read_frame_header(frame), frame);
  hw::pack_frame(frame, 4, m, 1, 1, 0, {.relayed_from = 3});
  EXPECT_THROW(switching.accept(hw::read_frame_header(frame), frame), hw::FrameError);

  hw::pack_frame(frame, 4, m, 0, 0, 0, {.forward_to = 2});
  const std::int32_t negative = -1;
  std::memcpy(frame.data() + 20, &negative, 4);  // the hop rank field
  EXPECT_THROW(hw::read_frame_header(frame), hw::FrameError);
  hw::pack_credit_frame(frame, 0, 1);
  frame[4] |= std::byte{8};  // the forward flag on a credit frame
  EXPECT_THROW(hw::read_frame_header(frame), hw::FrameError);
}

// A closing runtime says so in its last frame to a relay; a credit frame closes or asks, not both.
TEST(Frames, OnlyACreditFrameSaysItIsTheLast) {
  std::vector<std::byte> frame(4096);
  hw::pack_credit_frame(frame, 9, 0, hw::CreditNote::kClose);
  const hw::FrameHeader h = hw::read_frame_header(frame);
  EXPECT_TRUE(h.credit_only && h.closes && !h.asks);
  frame[4] |= std::byte{4};  // and the ask flag
  EXPECT_THROW(hw::read_frame_header(frame), hw::FrameError);
  hw::pack_frame(frame, 1, patterned(10), 0, 6, 0);
  frame[4] |= std::byte{32};  // the close flag on a data frame
  EXPECT_THROW(hw::read_frame_header(frame), hw::FrameError);
}

TEST(Frames, ALostFrameIsDetected) {
  const engine::Payload m = patterned(10000);  // three frames at 4 KiB
  std::vector<std::byte> frame(4096);
  hw::FrameAssembler assembler;
  hw::pack_frame(frame, 1, m, 0, 0, 0);
  assembler.accept(hw::read_frame_header(frame), frame);
  hw::pack_frame(frame, 1, m, 2, 2, 0);
  EXPECT_THROW(assembler.accept(hw::read_frame_header(frame), frame), hw::FrameError);
}

TEST(Frames, AFrameOfAnotherMessageCannotInterruptOne) {
  const engine::Payload m = patterned(10000), other = patterned(20000);
  std::vector<std::byte> frame(4096);
  hw::FrameAssembler assembler;
  hw::pack_frame(frame, 1, m, 0, 0, 0);
  assembler.accept(hw::read_frame_header(frame), frame);
  hw::pack_frame(frame, 1, other, 1, 1, 0);
  EXPECT_THROW(assembler.accept(hw::read_frame_header(frame), frame), hw::FrameError);
}

// Found by bench/fuzz.sh wire: a first frame claiming an 822 MB message made the
// receiver allocate all of it before any of it arrived.
TEST(Frames, AHeaderClaimingAHugeMessageReservesOnlyWhatItsFramesBring) {
  // The fuzzer's input AU1WRjEBAAAAAgAAAAgAAAABAAAAAAAAWwgAADE= without its first (selector) byte.
  const std::uint8_t found[] = {0x4d, 0x56, 0x46, 0x31, 0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x08, 0x00,
                                0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x5b, 0x08, 0x00, 0x00, 0x31};
  std::vector<std::byte> frame(4096);
  std::memcpy(frame.data(), found, sizeof found);
  const hw::FrameHeader h = hw::read_frame_header(frame);
  ASSERT_EQ(h.message_bytes, 0x31000008u);  // 822 MB, under the 1 GiB cap
  hw::FrameAssembler assembler;
  EXPECT_FALSE(assembler.accept(h, frame).has_value());
  EXPECT_LE(assembler.held_bytes(), 8u);  // the frame brought 8 bytes

  // A real 64 MiB message: the buffer grows with its frames and ends at exactly its size.
  hw::FrameAssembler growing;
  const engine::Payload big = patterned(64ull << 20);
  std::vector<std::byte> f(512 * 1024);
  const std::uint64_t n = hw::frames_for(big.size, f.size());
  for (std::uint64_t i = 0; i + 1 < n; ++i) {
    hw::pack_frame(f, 5, big, i, i, 0);
    ASSERT_FALSE(growing.accept(hw::read_frame_header(f), f).has_value());
    ASSERT_LE(growing.held_bytes(), 2 * (i + 1) * hw::frame_capacity(f.size())) << "after frame " << i;
  }
  hw::pack_frame(f, 5, big, n - 1, n - 1, 0);
  auto out = growing.accept(hw::read_frame_header(f), f);
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->second.bytes.capacity(), big.size);
  EXPECT_TRUE(out->second.bytes == big.bytes);
}

TEST(Frames, ForeignOrOverlongFramesAreRefused) {
  std::vector<std::byte> frame(4096);
  hw::pack_frame(frame, 1, patterned(100), 0, 0, 0);
  frame[0] = std::byte{0};
  EXPECT_THROW(hw::read_frame_header(frame), hw::FrameError);
  hw::pack_frame(frame, 1, patterned(100), 0, 0, 0);
  const std::uint32_t too_long = 4096;
  std::memcpy(frame.data() + 12, &too_long, 4);  // chunk length field
  EXPECT_THROW(hw::read_frame_header(frame), hw::FrameError);
}

TEST(Frames, StrideMustBeAMultipleOf4KiBUpTo512KiB) {
  EXPECT_NO_THROW(hw::check_frame_stride(4096));
  EXPECT_NO_THROW(hw::check_frame_stride(512 * 1024));
  EXPECT_THROW(hw::check_frame_stride(2048), std::invalid_argument);
  EXPECT_THROW(hw::check_frame_stride(6000), std::invalid_argument);
  EXPECT_THROW(hw::check_frame_stride(1024 * 1024), std::invalid_argument);
}

}  // namespace
