// The {lid, qpn, psn, gid} record peers exchange before connecting.
#include "hw/verbs/verbs_endpoint.hpp"

#include <gtest/gtest.h>

namespace {

hw::VerbsEndpoint sample() {
  hw::VerbsEndpoint e;
  e.lid = 0xbeef;
  e.qpn = 0xabcdef;
  e.psn = 0x123456;
  e.gid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 7};
  e.mtu = 5;
  return e;
}

TEST(VerbsEndpoint, RoundTripsThroughItsWireForm) {
  const std::vector<std::byte> wire = hw::serialize(sample());
  ASSERT_EQ(wire.size(), hw::kEndpointWireBytes);
  EXPECT_EQ(hw::parse_endpoint(wire), sample());
}

TEST(VerbsEndpoint, WireFormIsLittleEndianWhateverTheHost) {
  const std::vector<std::byte> wire = hw::serialize(sample());
  EXPECT_EQ(wire[0], std::byte{0xef});  // lid low byte first
  EXPECT_EQ(wire[2], std::byte{0xef});  // qpn 0xabcdef
  EXPECT_EQ(wire[4], std::byte{0xab});
  EXPECT_EQ(wire[25], std::byte{7});  // last byte of the gid
  EXPECT_EQ(wire[26], std::byte{5});  // the MTU code
}

TEST(VerbsEndpoint, RefusesWrongLengthsAndOversizedNumbers) {
  std::vector<std::byte> wire = hw::serialize(sample());
  EXPECT_THROW(hw::parse_endpoint(std::span(wire).first(26)), std::runtime_error);
  wire[26] = std::byte{6};  // no such MTU
  EXPECT_THROW(hw::parse_endpoint(wire), std::runtime_error);
  wire[26] = std::byte{5};
  wire[5] = std::byte{1};  // qpn's top byte: beyond 24 bits
  EXPECT_THROW(hw::parse_endpoint(wire), std::runtime_error);
  hw::VerbsEndpoint big = sample();
  big.psn = 1u << 24;
  EXPECT_THROW(hw::serialize(big), std::invalid_argument);
}

TEST(VerbsEndpoint, RecognisesIpv4MappedGids) {
  EXPECT_TRUE(hw::is_ipv4_mapped(sample().gid));
  EXPECT_EQ(hw::gid_to_string(sample().gid), "::ffff:10.0.0.7");
  std::array<std::uint8_t, 16> link_local{0xfe, 0x80};
  link_local[15] = 1;
  EXPECT_FALSE(hw::is_ipv4_mapped(link_local));
  EXPECT_FALSE(hw::is_ipv4_mapped({}));
}

}  // namespace
