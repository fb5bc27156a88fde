// Credit flow control: a SEND never outruns a RECV the peer has posted, and
// two peers sending to each other as fast as credits allow never deadlock.
#include "hw/verbs/verbs_credits.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <random>

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

TEST(CreditWindow, PiggybacksWhatItOwesOnTheNextFrame) {
  hw::CreditWindow w(8);
  w.on_frame(0);
  w.on_frame(0);
  EXPECT_EQ(w.owed(), 2u);
  EXPECT_FALSE(w.should_return_credits());  // below half the window
  EXPECT_EQ(w.spend(), 2u);
  EXPECT_EQ(w.owed(), 0u);
}

TEST(CreditWindow, AskForACreditFrameAtHalfTheWindow) {
  hw::CreditWindow w(8);
  for (int i = 0; i < 4; ++i) w.on_frame(0);
  EXPECT_TRUE(w.should_return_credits());
}

TEST(CreditWindow, RefusesMoreCreditsThanWereSpent) {
  hw::CreditWindow w(4);
  w.spend();
  EXPECT_THROW(w.on_frame(2), std::runtime_error);
  EXPECT_THROW(hw::CreditWindow(2), std::invalid_argument);
}

TEST(CreditWindow, OneOwedSlotIsNotWorthAFrame) {
  hw::CreditWindow w(3);
  w.on_frame(0);
  EXPECT_FALSE(w.should_return_credits());
  w.on_frame(0);
  EXPECT_TRUE(w.should_return_credits());
}

// Two peers joined by in-order queues, each with `depth` receive slots,
// sending data frames both ways in a seeded random interleaving, by the same
// rule as VerbsRuntime::push: data while credits allow, else a credit frame
// when one is due.
struct Side {
  explicit Side(std::uint32_t depth) : window(depth) {}
  hw::CreditWindow window;
  std::uint64_t data_left = 0;
  std::deque<std::uint32_t> to_peer;  // frames in flight, each carrying its grant
};

bool try_send(Side& me, std::uint32_t depth) {
  if (me.data_left > 0 && me.window.can_send_data()) {
    --me.data_left;
  } else if (!me.window.should_return_credits()) {
    return false;
  }
  me.to_peer.push_back(me.window.spend());
  EXPECT_LE(me.to_peer.size(), depth) << "a frame was sent with no receive posted for it";
  return true;
}

bool try_deliver(Side& from, Side& to) {
  if (from.to_peer.empty()) return false;
  to.window.on_frame(from.to_peer.front());  // the receiver reposts the slot at once
  from.to_peer.pop_front();
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
        switch (rng() % 4) {
          case 0:
            moved = try_send(a, depth);
            break;
          case 1:
            moved = try_send(b, depth);
            break;
          case 2:
            moved = try_deliver(a, b);
            break;
          default:
            moved = try_deliver(b, a);
        }
        idle_rounds = moved ? 0 : idle_rounds + 1;
      }
      ASSERT_LT(rounds, 1000000) << "credit frames bounce forever at depth " << depth << ", seed " << seed;
      ASSERT_EQ(a.data_left + b.data_left, 0u) << "deadlock at depth " << depth << ", seed " << seed;
    }
  }
}

}  // namespace
