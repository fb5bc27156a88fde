// CollectiveBuffer::assign_sum: the parts are summed in the order given, the
// buffer's own values (a null part) wherever they stand in it, so that every
// rank and every runtime gets the same bits.
#include <gtest/gtest.h>

#include <span>
#include <stdexcept>
#include <vector>

#include "engine/collectives.hpp"

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

TEST(AssignSum, ThePartsMustHoldTheRangesElements) {
  std::vector<float> own(8, 0.0f);
  auto buf = engine::CollectiveBuffer::real(own);
  const engine::Payload short_part = floats(std::vector<float>(7, 1.0f));
  const engine::Payload* parts[] = {nullptr, &short_part};
  EXPECT_THROW(buf.assign_sum(0, 8, parts), std::runtime_error);
}

}  // namespace
