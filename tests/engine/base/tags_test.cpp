// The rules of engine/base/tags.hpp, checked for every epoch they promise to cover.
#include "engine/base/tags.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <set>

namespace {

namespace tags = engine::tags;

constexpr int kEpochTags[] = {tags::kStep, tags::kActivation, tags::kTokens, tags::kCommand, tags::kCollective};

TEST(Tags, EveryEpochTagFitsBelowTheEpochStride) {
  for (int tag : kEpochTags) {
    EXPECT_GT(tag, 0);
    EXPECT_LT(tag, tags::kEpochStride);
  }
}

TEST(Tags, No1023ConsecutiveEpochsShareAFencedTagFromAnyStart) {
  for (int first : {0, 1, 1000, 1023, 5000, 2'000'000}) {
    std::set<int> seen;
    for (int epoch = first; epoch < first + tags::kFencedEpochs; ++epoch)
      for (int tag : kEpochTags) EXPECT_TRUE(seen.insert(tags::fenced(tag, epoch)).second) << epoch << " " << tag;
  }
}

// Past epoch 1024, and up to the largest epoch an int holds, a fenced tag
// stays between the heartbeat and control tags and never overflows.
TEST(Tags, NoEpochEverReachesAnUnfencedTag) {
  for (int epoch : {0, 1022, 1023, 1024, 1025, 2046, 2047, 2048, 1 << 20, std::numeric_limits<int>::max()})
    for (int tag : kEpochTags) {
      const int wire = tags::fenced(tag, epoch);
      EXPECT_GT(wire, tags::kHeartbeat) << epoch;
      EXPECT_LT(wire, tags::kControl) << epoch;
    }
}

TEST(Tags, TransportTagsAreNegativeAndDistinct) {
  const std::set<int> transport = {tags::kBarrier,   tags::kResult,   tags::kReportBeat,
                                   tags::kReporting, tags::kEndpoint, tags::kReady};
  EXPECT_EQ(transport.size(), 6u);
  EXPECT_LT(*transport.rbegin(), 0);
}

// What an epoch drops from the inbox: the tags of the epochs just before it,
// never its own, the next ones (a faster peer's), or an unfenced tag.
TEST(Tags, AnEpochDropsTheTagsOfTheEpochsBeforeItAndNothingElse) {
  for (int epoch : {0, 1, 5, 511, 1022, 1023, 1024, 2047, 5000}) {
    for (int tag : kEpochTags) {
      EXPECT_FALSE(tags::fenced_before(tags::fenced(tag, epoch), epoch)) << epoch;
      EXPECT_FALSE(tags::fenced_before(tags::fenced(tag, epoch + 1), epoch)) << epoch;
      EXPECT_FALSE(tags::fenced_before(tags::fenced(tag, epoch + 500), epoch)) << epoch;
      if (epoch >= 511) {
        EXPECT_TRUE(tags::fenced_before(tags::fenced(tag, epoch - 1), epoch)) << epoch;
        EXPECT_TRUE(tags::fenced_before(tags::fenced(tag, epoch - 511), epoch)) << epoch;
      }
    }
    for (int unfenced : {tags::kHeartbeat, tags::kControl, tags::kBarrier, tags::kResult, tags::kEndpoint})
      EXPECT_FALSE(tags::fenced_before(unfenced, epoch)) << unfenced;
  }
}

}  // namespace
