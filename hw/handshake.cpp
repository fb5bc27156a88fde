#include "hw/handshake.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace hw {

namespace {

constexpr std::uint32_t kHelloMagic = 0x5348494d;  // "MIHS"
constexpr std::uint32_t kHelloVersion = 1;
constexpr std::size_t kHostBytes = 64;
constexpr std::size_t kHostAt = 16;

}  // namespace

std::vector<char> encode_hello(const Hello& h) {
  std::vector<char> b(kHelloBytes, 0);
  const std::int32_t words[4] = {static_cast<std::int32_t>(kHelloMagic), static_cast<std::int32_t>(kHelloVersion),
                                 h.rank, h.port};
  std::memcpy(b.data(), words, sizeof words);
  std::memcpy(b.data() + kHostAt, h.host.data(), std::min(h.host.size(), kHostBytes - 1));
  return b;
}

Hello decode_hello(const char* bytes) {
  std::uint32_t magic, version;
  Hello h;
  std::memcpy(&magic, bytes, 4);
  std::memcpy(&version, bytes + 4, 4);
  std::memcpy(&h.rank, bytes + 8, 4);
  std::memcpy(&h.port, bytes + 12, 4);
  if (magic != kHelloMagic) throw std::invalid_argument("not a meshinfer handshake");
  if (version != kHelloVersion)
    throw std::invalid_argument(fmt::format("handshake version {} (this build speaks {})", version, kHelloVersion));
  if (h.port < 0 || h.port > 65535) throw std::invalid_argument(fmt::format("port {} out of range", h.port));
  const std::size_t host_len = strnlen(bytes + kHostAt, kHostBytes);
  if (host_len == kHostBytes) throw std::invalid_argument("host name not terminated");
  h.host.assign(bytes + kHostAt, host_len);
  return h;
}

}  // namespace hw
