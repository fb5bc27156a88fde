#include "hw/fallback_runtime.hpp"

#include <algorithm>
#include <exception>
#include <stdexcept>

#include "engine/base/error.hpp"

namespace hw {

namespace {

// How long a receive waits on the active network before it looks at the
// other: the delay of a message that came on the other, at a move only.
constexpr double kSliceS = 0.005;

}  // namespace

FallbackRuntime::FallbackRuntime(std::unique_ptr<engine::Runtime> primary, std::unique_ptr<engine::Runtime> secondary)
    : primary_(std::move(primary)), secondary_(std::move(secondary)) {
  if (primary_->rank() != secondary_->rank() || primary_->world() != secondary_->world())
    throw std::invalid_argument("the two networks' runtimes are not the same rank of one world");
}

FallbackRuntime::~FallbackRuntime() {
  secondary_.reset();
  // Nothing is owed on a network left behind (it may well be dead): closing it waits on no peer.
  if (on_secondary_)
    for (int peer = 0; peer < primary_->world(); ++peer)
      if (peer != primary_->rank()) primary_->give_up(peer, "left for the secondary network");
}

bool FallbackRuntime::use_secondary_network() {
  on_secondary_ = true;
  return true;
}

engine::Payload FallbackRuntime::recv(int src, int tag, double timeout_s) {
  const double deadline = now() + timeout_s;
  for (;;) {
    std::exception_ptr lost;  // on the active network: final once the other holds nothing either
    try {
      return active().recv(src, tag, std::clamp(deadline - now(), 0.0, kSliceS));
    } catch (const engine::Timeout&) {
    } catch (const engine::PeerFailure&) {
      lost = std::current_exception();
    }
    try {
      return inactive().recv(src, tag, 0);
    } catch (const engine::Timeout&) {
    } catch (const engine::PeerFailure&) {  // the network this rank left, or is not on yet
    }
    if (lost) std::rethrow_exception(lost);
    if (now() >= deadline) throw engine::Timeout(src, tag, timeout_s);
  }
}

void FallbackRuntime::drop_waiting(const std::function<bool(int tag)>& stale) {
  primary_->drop_waiting(stale);
  secondary_->drop_waiting(stale);
}

void FallbackRuntime::give_up(int peer, const std::string& why) {
  primary_->give_up(peer, why);
  secondary_->give_up(peer, why);
}

}  // namespace hw
