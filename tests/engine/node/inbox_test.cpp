// The queue behind every runtime's recv: what a receiver gets, and in which order.
#include "engine/node/inbox.hpp"

#include <gtest/gtest.h>

#include <map>

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
  EXPECT_EQ(got->bytes, engine::Bytes(std::begin(data), std::end(data)));
}

// What waits is bounded per sender, in real bytes: one sender past its limit
// is refused (its transport fails it) while the others and size-only payloads go on.
TEST(Inbox, RefusesASenderPastItsByteLimitAndOnlyThatSender) {
  Inbox inbox(100);
  const auto bytes = [](std::size_t n) { return Payload::of(std::vector<std::byte>(n)); };
  EXPECT_TRUE(inbox.put(1, 7, bytes(60)));
  EXPECT_FALSE(inbox.put(1, 8, bytes(50)));
  EXPECT_FALSE(inbox.holds(1, 8));
  EXPECT_TRUE(inbox.put(2, 7, bytes(100)));
  EXPECT_TRUE(inbox.put(1, 9, Payload::sized(1'000'000)));  // size only: holds no memory
  EXPECT_EQ(inbox.take(1, 7)->size, 60u);
  EXPECT_TRUE(inbox.put(1, 8, bytes(100)));  // taken bytes no longer count
}

TEST(Inbox, DropsOnlyTheTagsItIsTold) {
  Inbox inbox(100);
  inbox.put(1, 7, Payload::of(std::vector<std::byte>(100)));
  inbox.put(2, 7, Payload::sized(1));
  inbox.put(1, 8, Payload::sized(2));
  inbox.put(1, 7, Payload::sized(3));
  const std::map<int, std::size_t> dropped = inbox.drop_if([](int tag) { return tag == 7; });
  EXPECT_EQ(dropped, (std::map<int, std::size_t>{{1, 2}, {2, 1}}));  // what a transport returns credits for
  EXPECT_FALSE(inbox.holds(1, 7));
  EXPECT_FALSE(inbox.holds(2, 7));
  EXPECT_EQ(inbox.take(1, 8)->size, 2u);
  EXPECT_TRUE(inbox.put(1, 9, Payload::of(std::vector<std::byte>(100))));  // the dropped bytes are free again
}

}  // namespace
