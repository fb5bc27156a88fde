// Credit-based flow control for one peer, so a SEND never outruns a posted
// RECV and a receiver that reads nothing stops its sender. A credit is one
// receive slot (one frame) the peer has posted for us. The receiver reposts a
// slot at once (the frame is copied out) and owes it back once consumed: at
// once while what the peer's messages hold here (unread, or waiting to be
// forwarded) is under the receiver's bound, else when that drops under it. So
// a peer that is not read stops after the bound and one window. What is owed
// goes back in the header of the next frame to that peer. One credit stays
// reserved for a frame without messages, sent when half the window is owed or
// when the peer has no credit left for data; never for one owed slot alone, so
// two idle peers do not return each other's credit frames forever.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>

namespace hw {

class CreditWindow {
 public:
  // `depth`: receive slots each side posts for the other. REQUIRES: depth >= 3.
  explicit CreditWindow(std::uint32_t depth) : depth_(depth), credits_(depth) {
    if (depth < 3) throw std::invalid_argument("queue depth must be at least 3 frames");
  }

  bool can_send_data() const { return credits_ > 1; }
  // Half the window (at least two slots) is owed, or the peer, holding only
  // the slots neither owed nor unread, has none left for data.
  bool should_return_credits() const {
    if (owed_ == 0 || credits_ == 0) return false;
    return owed_ >= std::max(2u, (depth_ + 1) / 2) || owed_ + unread_ >= depth_ - 1;
  }

  // Spends one credit on a frame; returns the credits that frame gives back.
  // REQUIRES: can_send_data(), or should_return_credits() for a credit-only frame.
  std::uint32_t spend() {
    if (credits_ == 0) throw std::logic_error("frame sent without a credit");
    --credits_;
    const std::uint32_t grant = owed_;
    owed_ = 0;
    return grant;
  }

  // A frame from the peer arrived (its slot reposted) carrying `granted`
  // credits; its slot is not owed back until consume().
  void on_frame(std::uint32_t granted) {
    if (granted > depth_ - credits_) throw std::runtime_error("peer returned more credits than it was given");
    credits_ += granted;
    ++unread_;
  }
  // One arrived frame was consumed: its slot is owed back. REQUIRES: unread() > 0.
  void consume() {
    if (unread_ == 0) throw std::logic_error("consumed a frame that never arrived");
    --unread_;
    ++owed_;
  }

  std::uint32_t credits() const { return credits_; }
  std::uint32_t owed() const { return owed_; }
  std::uint32_t unread() const { return unread_; }

 private:
  std::uint32_t depth_;
  std::uint32_t credits_;
  std::uint32_t owed_ = 0;
  std::uint32_t unread_ = 0;
};

}  // namespace hw
