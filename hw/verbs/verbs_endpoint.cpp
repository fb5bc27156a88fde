#include "hw/verbs/verbs_endpoint.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>

#include <algorithm>
#include <stdexcept>

namespace hw {

namespace {

constexpr std::uint32_t kMax24 = (1u << 24) - 1;

void put(std::vector<std::byte>& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<std::byte>(v >> (8 * i)));
}

std::uint64_t get(std::span<const std::byte> in, std::size_t at, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<std::uint64_t>(in[at + i]) << (8 * i);
  return v;
}

}  // namespace

std::vector<std::byte> serialize(const VerbsEndpoint& e) {
  if (e.qpn > kMax24 || e.psn > kMax24) throw std::invalid_argument("qpn and psn are 24-bit numbers");
  if (e.mtu < 1 || e.mtu > 5) throw std::invalid_argument("mtu is an ibv_mtu code from 1 to 5");
  std::vector<std::byte> out;
  out.reserve(kEndpointWireBytes);
  put(out, e.lid, 2);
  put(out, e.qpn, 4);
  put(out, e.psn, 4);
  for (std::uint8_t b : e.gid) out.push_back(static_cast<std::byte>(b));
  put(out, e.mtu, 1);
  return out;
}

VerbsEndpoint parse_endpoint(std::span<const std::byte> wire) {
  if (wire.size() != kEndpointWireBytes)
    throw std::runtime_error(fmt::format("endpoint of {} bytes, expected {}", wire.size(), kEndpointWireBytes));
  VerbsEndpoint e;
  e.lid = static_cast<std::uint16_t>(get(wire, 0, 2));
  e.qpn = static_cast<std::uint32_t>(get(wire, 2, 4));
  e.psn = static_cast<std::uint32_t>(get(wire, 6, 4));
  if (e.qpn > kMax24 || e.psn > kMax24)
    throw std::runtime_error(fmt::format("endpoint qpn {} / psn {} exceed 24 bits", e.qpn, e.psn));
  std::transform(wire.begin() + 10, wire.begin() + 26, e.gid.begin(),
                 [](std::byte b) { return static_cast<std::uint8_t>(b); });
  e.mtu = static_cast<std::uint8_t>(get(wire, 26, 1));
  if (e.mtu < 1 || e.mtu > 5) throw std::runtime_error(fmt::format("endpoint MTU code {} is not 1 to 5", e.mtu));
  return e;
}

bool is_ipv4_mapped(const std::array<std::uint8_t, 16>& gid) {
  return std::all_of(gid.begin(), gid.begin() + 10, [](std::uint8_t b) { return b == 0; }) && gid[10] == 0xff &&
         gid[11] == 0xff;
}

std::string gid_to_string(const std::array<std::uint8_t, 16>& gid) {
  char text[INET6_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET6, gid.data(), text, sizeof text);
  return text;
}

}  // namespace hw
