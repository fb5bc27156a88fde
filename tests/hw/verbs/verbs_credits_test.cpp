// Credit flow control: a SEND never outruns a RECV the peer has posted, a
// receiver that reads nothing holds at most a window of frames, and two peers
// sending to each other as fast as credits allow never deadlock.
#include "hw/verbs/verbs_credits.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <random>
#include <utility>

namespace {

TEST(CreditWindow, KeepsOneCreditToReturnCredits) {
  hw::CreditWindow w(4);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(w.can_send_data());
    w.spend();
  }
  EXPECT_FALSE(w.can_send_data());
  EXPECT_EQ(w.credits(), 1u);
}

// Frames that arrived and were consumed at once.
void consumed_frames(hw::CreditWindow& w, int n) {
  for (int i = 0; i < n; ++i) {
    w.on_frame(0);
    w.consume();
  }
}

TEST(CreditWindow, PiggybacksWhatItOwesOnTheNextFrame) {
  hw::CreditWindow w(8);
  consumed_frames(w, 2);
  EXPECT_EQ(w.owed(), 2u);
  EXPECT_FALSE(w.should_return_credits());  // below half the window
  EXPECT_EQ(w.spend(), 2u);
  EXPECT_EQ(w.owed(), 0u);
}

TEST(CreditWindow, AskForACreditFrameAtHalfTheWindow) {
  hw::CreditWindow w(8);
  consumed_frames(w, 4);
  EXPECT_TRUE(w.should_return_credits());
}

TEST(CreditWindow, RefusesMoreCreditsThanWereSpent) {
  hw::CreditWindow w(4);
  w.spend();
  EXPECT_THROW(w.on_frame(2), std::runtime_error);
  EXPECT_THROW(hw::CreditWindow(2), std::invalid_argument);
}

TEST(CreditWindow, OneOwedSlotIsNotWorthAFrame) {
  hw::CreditWindow w(4);
  consumed_frames(w, 1);
  EXPECT_FALSE(w.should_return_credits());
  consumed_frames(w, 1);
  EXPECT_TRUE(w.should_return_credits());
}

// The receiver's memory is bounded: frames it has not consumed (messages in
// its inbox nobody has read) are never owed back, so the sender stops.
TEST(CreditWindow, AReceiverThatReadsNothingStopsItsSenderAfterTheWindow) {
  hw::CreditWindow sender(8), receiver(8);
  int sent = 0;
  for (; sender.can_send_data() && sent < 100; ++sent) receiver.on_frame(sender.spend());
  EXPECT_EQ(sent, 7);  // one credit stays for credit frames
  EXPECT_EQ(receiver.unread(), 7u);
  EXPECT_FALSE(receiver.should_return_credits());  // nothing read: nothing owed
  receiver.consume();                              // one message read
  ASSERT_TRUE(receiver.should_return_credits());   // the sender waits for it: returned at once
  sender.on_frame(receiver.spend());
  sender.consume();  // a credit frame is consumed as it arrives
  EXPECT_TRUE(sender.can_send_data());
  receiver.on_frame(sender.spend());
  EXPECT_FALSE(sender.can_send_data());
  EXPECT_EQ(receiver.unread(), 7u);
}

// Two peers joined by in-order queues, each with `depth` receive slots,
// sending data frames both ways in a seeded random interleaving, by the same
// rule as VerbsRuntime::push: data while credits allow, else a credit frame
// when one is due. A credit frame is consumed as it arrives; a data frame
// waits until its reader takes it, at a random later step.
struct Side {
  explicit Side(std::uint32_t depth) : window(depth) {}
  hw::CreditWindow window;
  std::uint64_t data_left = 0, unread_data = 0;
  std::deque<std::pair<std::uint32_t, bool>> to_peer;  // frames in flight: grant, carries data
};

bool try_send(Side& me, std::uint32_t depth) {
  bool data = false;
  if (me.data_left > 0 && me.window.can_send_data()) {
    --me.data_left;
    data = true;
  } else if (!me.window.should_return_credits()) {
    return false;
  }
  me.to_peer.emplace_back(me.window.spend(), data);
  EXPECT_LE(me.to_peer.size(), depth) << "a frame was sent with no receive posted for it";
  return true;
}

bool try_deliver(Side& from, Side& to, std::uint64_t max_unread) {
  if (from.to_peer.empty()) return false;
  const auto [grant, data] = from.to_peer.front();
  to.window.on_frame(grant);  // the receiver reposts the slot at once
  if (data)
    EXPECT_LE(++to.unread_data, max_unread) << "more unread frames than the window";
  else
    to.window.consume();
  from.to_peer.pop_front();
  return true;
}

bool try_read(Side& me) {
  if (me.unread_data == 0) return false;
  --me.unread_data;
  me.window.consume();
  return true;
}

TEST(CreditWindow, BidirectionalTrafficNeitherOutrunsReceivesNorStalls) {
  for (std::uint32_t depth : {3u, 4u, 8u, 64u}) {
    for (unsigned seed = 1; seed <= 20; ++seed) {
      std::mt19937 rng(seed);
      Side a(depth), b(depth);
      a.data_left = 1000;
      b.data_left = seed % 2 ? 0 : 1000 + seed;  // one-way and two-way traffic
      int idle_rounds = 0, rounds = 0;
      for (; idle_rounds < 200 && rounds < 1000000; ++rounds) {
        bool moved = false;
        switch (rng() % 6) {
          case 0:
            moved = try_send(a, depth);
            break;
          case 1:
            moved = try_send(b, depth);
            break;
          case 2:
            moved = try_deliver(a, b, depth - 1);
            break;
          case 3:
            moved = try_deliver(b, a, depth - 1);
            break;
          case 4:
            moved = try_read(a);
            break;
          default:
            moved = try_read(b);
        }
        idle_rounds = moved ? 0 : idle_rounds + 1;
      }
      ASSERT_LT(rounds, 1000000) << "credit frames bounce forever at depth " << depth << ", seed " << seed;
      ASSERT_EQ(a.data_left + b.data_left, 0u) << "deadlock at depth " << depth << ", seed " << seed;
    }
  }
}

}  // namespace
