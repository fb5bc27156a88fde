// The queue behind every runtime's recv: what a receiver gets, and in which order.
#include "engine/inbox.hpp"

#include <gtest/gtest.h>

namespace {

using engine::Inbox;
using engine::Payload;

TEST(Inbox, GivesOneSendersMessagesOfOneTagInTheOrderTheyArrived) {
  Inbox inbox;
  inbox.put(1, 7, Payload::sized(10));
  inbox.put(1, 7, Payload::sized(20));
  inbox.put(1, 7, Payload::sized(30));
  EXPECT_EQ(inbox.take(1, 7)->size, 10u);
  EXPECT_EQ(inbox.take(1, 7)->size, 20u);
  EXPECT_EQ(inbox.take(1, 7)->size, 30u);
  EXPECT_FALSE(inbox.take(1, 7));
}

TEST(Inbox, KeepsOtherTagsAndOtherSendersForTheirOwnTake) {
  Inbox inbox;
  inbox.put(1, 7, Payload::sized(1));
  inbox.put(2, 7, Payload::sized(2));
  inbox.put(1, 8, Payload::sized(3));
  EXPECT_FALSE(inbox.holds(3, 7));
  EXPECT_FALSE(inbox.take(1, 9));
  EXPECT_EQ(inbox.take(1, 8)->size, 3u);
  EXPECT_EQ(inbox.take(2, 7)->size, 2u);
  EXPECT_TRUE(inbox.holds(1, 7));
  EXPECT_EQ(inbox.take(1, 7)->size, 1u);
  EXPECT_FALSE(inbox.holds(1, 7));
}

TEST(Inbox, HandsBackTheBytesItWasGiven) {
  const std::byte data[] = {std::byte{1}, std::byte{2}, std::byte{3}};
  Inbox inbox;
  inbox.put(0, -1, Payload::of(data));
  const std::optional<Payload> got = inbox.take(0, -1);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->size, 3u);
  EXPECT_EQ(got->bytes, std::vector<std::byte>(std::begin(data), std::end(data)));
}

}  // namespace
