// What every transport (TcpRuntime, VerbsRuntime) keeps of a peer besides its
// wire, and the rules they share: a failed peer stays failed with its first
// reason and drops what was queued for it; a closing runtime flushes what is
// queued for live peers, but never waits past its bound; a wait polls a while
// before it sleeps.
#pragma once

#include <algorithm>
#include <chrono>
#include <deque>
#include <string>
#include <utility>

#include "engine/error.hpp"
#include "engine/inbox.hpp"

namespace hw {

// How long a wait polls its wire, yielding the core, before it sleeps: the
// next message of a collective is often microseconds away, less than it takes
// to wake a sleeping process.
inline constexpr auto kSpinBeforeSleeping = std::chrono::microseconds(50);

// `Out`: one queued outgoing message, in the transport's own form.
template <class Out>
struct PeerState {
  std::deque<Out> out;
  std::string failure;  // non-empty once the peer is gone

  // Records why the peer is gone (the first reason stays); its queue will never be sent.
  void fail(const std::string& why) {
    if (failure.empty()) failure = why;
    out.clear();
  }
  // Throws PeerFailure for `rank` (this peer) once it is gone.
  void check(int rank) const {
    if (!failure.empty()) throw engine::PeerFailure(rank, failure);
  }
};

// Calls progress(slice_end) in slices of at most 50 ms while pending() and
// before `until`: what a transport's destructor does to send what is queued.
template <class Pending, class Progress>
void flush_until(std::chrono::steady_clock::time_point until, Pending pending, Progress progress) {
  using Clock = std::chrono::steady_clock;
  while (pending() && Clock::now() < until) progress(std::min(until, Clock::now() + std::chrono::milliseconds(50)));
}

// The end of a recv after its wait: the message, else PeerFailure when the
// peer is gone, else Timeout.
template <class Out>
engine::Payload take_after_wait(engine::Inbox& inbox, const PeerState<Out>& peer, int src, int tag, double timeout_s) {
  if (auto m = inbox.take(src, tag)) return std::move(*m);
  peer.check(src);
  throw engine::Timeout(src, tag, timeout_s);
}

}  // namespace hw
