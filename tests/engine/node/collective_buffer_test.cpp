// CollectiveBuffer::assign_sum: the parts are summed in the order given, the
// buffer's own values (a null part) wherever they stand in it, so that every
// rank and every runtime gets the same bits.
#include <gtest/gtest.h>

#include <cstring>
#include <span>
#include <stdexcept>
#include <vector>

#include "engine/node/collectives.hpp"

namespace {

engine::Payload floats(const std::vector<float>& v) {
  return engine::Payload::of(std::as_bytes(std::span<const float>(v)));
}

// In floats, (1e8 + -1e8) + 1 is 1 but (1e8 + 1) + -1e8 is 0: the order shows.
TEST(AssignSum, AddsThePartsInTheGivenOrderWithTheOwnValuesWhereTheNullPartStands) {
  constexpr std::uint64_t kCount = 5000;  // more than one chunk of the sum
  const std::vector<float> big(kCount, 1e8f), one(kCount, 1.0f);
  const engine::Payload a = floats(big), c = floats(one);

  std::vector<float> own(kCount + 2, -1e8f);
  auto buf = engine::CollectiveBuffer::real(own);
  const engine::Payload* big_first[] = {&a, nullptr, &c};
  buf.assign_sum(1, kCount, big_first);
  EXPECT_EQ(own[0], -1e8f);  // outside the range: untouched
  EXPECT_EQ(own[kCount + 1], -1e8f);
  for (std::uint64_t i = 1; i <= kCount; ++i) ASSERT_EQ(own[i], 1.0f) << i;

  std::vector<float> again(kCount, -1e8f);
  auto buf2 = engine::CollectiveBuffer::real(again);
  const engine::Payload* own_last[] = {&a, &c, nullptr};
  buf2.assign_sum(0, kCount, own_last);
  for (std::uint64_t i = 0; i < kCount; ++i) ASSERT_EQ(again[i], 0.0f) << i;
}

// The ring sums into the message it sends on: the same bits as summing into the buffer.
TEST(AddOwnTo, GivesTheBitsAssignSumWouldWriteWithTheMessageFirst) {
  const std::vector<float> incoming{1e8f, 1.0f, -3.5f, 0.1f};
  std::vector<float> own{-1e8f, 1e8f, 2.25f, 0.2f}, summed = own;
  auto into_buffer = engine::CollectiveBuffer::real(summed);
  const engine::Payload part = floats(incoming);
  const engine::Payload* parts[] = {&part, nullptr};
  into_buffer.assign_sum(0, 4, parts);

  auto buf = engine::CollectiveBuffer::real(own);
  engine::Payload message = floats(incoming);
  buf.add_own_to(0, 4, message);
  EXPECT_EQ(0, std::memcmp(message.bytes.data(), summed.data(), 4 * sizeof(float)));
  EXPECT_EQ(own[0], -1e8f);  // the buffer is only read

  engine::Payload wrong_size = floats(std::vector<float>(3, 1.0f));
  EXPECT_THROW(buf.add_own_to(0, 4, wrong_size), std::runtime_error);
}

TEST(PassOn, SendsTheReceivedBytesOfARealBufferAndASizeOnlyMessageOtherwise) {
  std::vector<float> own(4, 0.0f);
  auto buf = engine::CollectiveBuffer::real(own);
  engine::Payload received = floats({1, 2, 3, 4});
  received.sent_s = 7;
  const std::byte* bytes = received.bytes.data();
  const engine::Payload out = buf.pass_on(std::move(received), 0, 4);
  EXPECT_EQ(out.bytes.data(), bytes);
  EXPECT_EQ(out.size, 16u);
  EXPECT_EQ(out.sent_s, -1);

  const auto sized = engine::CollectiveBuffer::sized(8, 2);
  const engine::Payload nothing_received{};
  const engine::Payload message = sized.pass_on(nothing_received, 2, 3);
  EXPECT_EQ(message.size, 6u);
  EXPECT_TRUE(message.bytes.empty());
}

TEST(AssignSum, ThePartsMustHoldTheRangesElements) {
  std::vector<float> own(8, 0.0f);
  auto buf = engine::CollectiveBuffer::real(own);
  const engine::Payload short_part = floats(std::vector<float>(7, 1.0f));
  const engine::Payload* parts[] = {nullptr, &short_part};
  EXPECT_THROW(buf.assign_sum(0, 8, parts), std::runtime_error);
}

}  // namespace
