// Credit-based flow control for one peer, so a SEND never outruns a posted
// RECV. A credit is one receive slot (one frame) the peer has posted for us.
// Every frame, data or credit-only, uses a slot; the receiver reposts it and
// owes it back, returned in the header of its next frame to that peer.
// One credit stays reserved for a credit-only frame, so two peers that both
// ran out can always pay each other back; a credit-only frame is sent only
// for two or more owed slots, so two idle peers do not return each other's
// credit frames forever.
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
  // Half the window (at least two slots) is owed: worth a frame of its own.
  bool should_return_credits() const { return owed_ >= std::max(2u, (depth_ + 1) / 2) && credits_ > 0; }

  // Spends one credit on a frame; returns the credits that frame gives back.
  // REQUIRES: can_send_data(), or should_return_credits() for a credit-only frame.
  std::uint32_t spend() {
    if (credits_ == 0) throw std::logic_error("frame sent without a credit");
    --credits_;
    const std::uint32_t grant = owed_;
    owed_ = 0;
    return grant;
  }

  // A frame from the peer arrived (its slot reposted) carrying `granted` credits.
  void on_frame(std::uint32_t granted) {
    if (granted > depth_ - credits_) throw std::runtime_error("peer returned more credits than it was given");
    credits_ += granted;
    ++owed_;
  }

  std::uint32_t credits() const { return credits_; }
  std::uint32_t owed() const { return owed_; }

 private:
  std::uint32_t depth_;
  std::uint32_t credits_;
  std::uint32_t owed_ = 0;
};

}  // namespace hw
