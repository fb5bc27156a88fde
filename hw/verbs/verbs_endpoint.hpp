// What a peer needs to reach one of our queue pairs: {lid, qpn, psn, gid, mtu},
// as exchanged over the TCP side channel. Fixed 27-byte little-endian wire form.
// No verbs dependency.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace hw {

struct VerbsEndpoint {
  std::uint16_t lid = 0;  // 0 on RoCE and Thunderbolt; routing is by GID
  std::uint32_t qpn = 0;  // 24 bits
  std::uint32_t psn = 0;  // 24 bits
  std::array<std::uint8_t, 16> gid{};
  // The port's active MTU as an ibv_mtu code (1 = 256 .. 5 = 4096): both ends
  // must use the smaller, or UC drops every multi-packet frame.
  std::uint8_t mtu = 3;

  bool operator==(const VerbsEndpoint&) const = default;
};

inline constexpr std::size_t kEndpointWireBytes = 27;

std::vector<std::byte> serialize(const VerbsEndpoint& e);
// Throws std::runtime_error on a wrong length, a qpn/psn over 24 bits or an unknown MTU code.
VerbsEndpoint parse_endpoint(std::span<const std::byte> wire);

// "::ffff:10.0.0.1" for an IPv4-mapped GID, else the full IPv6 form.
std::string gid_to_string(const std::array<std::uint8_t, 16>& gid);
bool is_ipv4_mapped(const std::array<std::uint8_t, 16>& gid);

}  // namespace hw
