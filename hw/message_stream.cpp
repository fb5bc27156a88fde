#include "hw/message_stream.hpp"

#include <algorithm>
#include <cstring>

namespace hw {

namespace {

// What a message's buffer starts at: most messages fit whole, and a header
// claiming a huge one gets no more before its bytes come.
constexpr std::uint64_t kFirstReserve = std::uint64_t{1} << 20;

}  // namespace

OutMessage::OutMessage(int tag, engine::Payload p, FrameRoute route)
    : header(encode_tcp_header(tag, p, route)), payload(std::move(p)) {}

std::size_t OutMessage::write_to(std::span<std::byte> to) {
  std::size_t n = 0;
  if (written < header.size()) {
    n = std::min(to.size(), static_cast<std::size_t>(header.size() - written));
    std::memcpy(to.data(), header.data() + written, n);
    written += n;
  }
  const std::uint64_t at = written - header.size();
  const auto m = static_cast<std::size_t>(std::min<std::uint64_t>(to.size() - n, payload.size - at));
  if (payload.bytes.empty())
    std::memset(to.data() + n, 0, m);
  else
    std::memcpy(to.data() + n, payload.bytes.data() + at, m);
  written += m;
  return n + m;
}

std::optional<InMessage> MessageReader::read(std::span<const std::byte>& in) {
  while (!in.empty()) {
    if (header_got_ < kTcpHeaderBytes) {
      const std::size_t n = std::min(in.size(), kTcpHeaderBytes - header_got_);
      std::memcpy(header_.data() + header_got_, in.data(), n);
      header_got_ += n;
      in = in.subspan(n);
      if (header_got_ < kTcpHeaderBytes) return std::nullopt;
      message_ = decode_tcp_header(header_, max_bytes_, world_);
      got_ = 0;
      bytes_ = engine::Bytes();
      if (message_.has_bytes) bytes_.reserve(std::min(message_.size, kFirstReserve));
    }
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(in.size(), message_.size - got_));
    if (message_.has_bytes && n > 0) {
      if (bytes_.capacity() < got_ + n)
        bytes_.reserve(std::min(message_.size, std::max<std::uint64_t>(2 * bytes_.capacity(), got_ + n)));
      const std::size_t at = bytes_.size();
      bytes_.resize(at + n);
      std::memcpy(bytes_.data() + at, in.data(), n);
    }
    got_ += n;  // a size-only payload's zeros are skipped
    in = in.subspan(n);
    if (auto whole = finished()) return whole;
  }
  return std::nullopt;
}

std::span<std::byte> MessageReader::rest(std::uint64_t at_least) {
  if (header_got_ < kTcpHeaderBytes || !message_.has_bytes || message_.size - got_ < at_least) return {};
  std::uint64_t until = bytes_.capacity();
  if (until < got_ + at_least) until = std::max<std::uint64_t>(2 * until, got_ + at_least);
  bytes_.resize(std::min(message_.size, until));
  return std::span(bytes_).subspan(got_);
}

std::optional<InMessage> MessageReader::received(std::size_t n) {
  got_ += n;
  bytes_.resize(got_);  // keeps its capacity
  return finished();
}

std::optional<InMessage> MessageReader::finished() {
  if (got_ < message_.size) return std::nullopt;
  header_got_ = 0;
  return InMessage{message_, engine::Payload{message_.size, std::move(bytes_)}};
}

}  // namespace hw
