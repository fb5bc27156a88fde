// The rules of engine/tags.hpp, checked for every epoch they promise to cover.
#include "engine/tags.hpp"

#include <gtest/gtest.h>

#include <set>

namespace {

namespace tags = engine::tags;

constexpr int kEpochTags[] = {tags::kStep, tags::kActivation, tags::kTokens, tags::kCommand, tags::kCollective};
constexpr int kLastSafeEpoch = 1022;

TEST(Tags, EveryEpochTagFitsBelowTheEpochStride) {
  for (int tag : kEpochTags) {
    EXPECT_GT(tag, 0);
    EXPECT_LT(tag, tags::kEpochStride);
  }
}

TEST(Tags, NoTwoEpochsUpTo1022ShareAFencedTagAndNoneMeetsAnUnfencedOne) {
  std::set<int> seen;
  for (int epoch = 0; epoch <= kLastSafeEpoch; ++epoch)
    for (int tag : kEpochTags) {
      const int wire = tags::fenced(tag, epoch);
      EXPECT_TRUE(seen.insert(wire).second) << "epoch " << epoch << " tag " << tag;
      EXPECT_GT(wire, tags::kHeartbeat);
      EXPECT_LT(wire, tags::kControl);
    }
}

TEST(Tags, EpochTagsAreFencedPastTheLimitIntoTheControlRange) {
  // The honest limit of the plain int arithmetic: the next epoch reaches kControl's range.
  EXPECT_GE(tags::fenced(tags::kStep, kLastSafeEpoch + 1), tags::kControl);
}

TEST(Tags, TransportTagsAreNegativeAndDistinct) {
  const std::set<int> transport = {tags::kBarrier, tags::kResult, tags::kEndpoint, tags::kReady, tags::kProbe};
  EXPECT_EQ(transport.size(), 5u);
  EXPECT_LT(*transport.rbegin(), 0);
}

}  // namespace
