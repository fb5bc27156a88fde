// What a frame from the wire may claim, for every transport: a length, flag
// or index outside these bounds is a FrameError that fails that one peer,
// never an allocation or a crash.
#pragma once

#include <cstdint>
#include <stdexcept>

namespace hw {

// The largest message any transport carries (the engine's largest is tens of
// MiB): a longer length from the wire is refused before anything is allocated.
inline constexpr std::uint64_t kMaxMessageBytes = std::uint64_t{1} << 30;

// A frame the receiver cannot accept: corrupt, out of order, or too long.
class FrameError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace hw
