#include "engine/cards/cards.hpp"

#include <algorithm>
#include <cmath>

namespace engine {

double wire_bytes(const LinkCard& card, double size) {
  if (card.frame_bytes <= 0) return size;
  const double frames = std::max(1.0, std::ceil(size / card.frame_bytes));
  if (card.frame_header_bytes <= 0) return frames * card.frame_bytes;
  // A card's bandwidth is goodput, which full frames' headers already lower:
  // only a short last frame's headers cost more than its share.
  const double header = card.frame_header_bytes;
  return (size + frames * header) * card.frame_bytes / (card.frame_bytes + header);
}

double timed_bytes(const LinkCard& card, double size) {
  const auto& points = card.wire_time_by_size;
  if (points.empty()) return wire_bytes(card, size);
  const auto above =
      std::upper_bound(points.begin(), points.end(), size, [](double s, const WireTime& p) { return s < p.bytes; });
  double seconds;
  if (above == points.begin()) {
    const WireTime& first = points.front();
    seconds = first.seconds * wire_bytes(card, size) / wire_bytes(card, first.bytes);
  } else if (above == points.end()) {
    const WireTime& last = points.back();
    seconds = last.seconds + (wire_bytes(card, size) - wire_bytes(card, last.bytes)) / card.bandwidth;
  } else {
    const WireTime& below = *(above - 1);
    seconds = below.seconds + (above->seconds - below.seconds) * (size - below.bytes) / (above->bytes - below.bytes);
  }
  return seconds * card.bandwidth;
}

}  // namespace engine
