// hw/doctor's readers against recorded outputs of each tool (fixtures/SOURCES.md
// says where each comes from).
#include "hw/doctor/parsers.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/cli_runner.hpp"

namespace {

using namespace hw::doctor;

std::string fixture(const std::string& name) {
  return testsupport::read_file(std::string(MESHINFER_SOURCE_DIR) + "/tests/hw/doctor/fixtures/" + name);
}

const NetPort& port(const std::vector<NetPort>& ports, const std::string& name) {
  for (const auto& p : ports)
    if (p.name == name) return p;
  throw std::runtime_error("no port " + name);
}

TEST(DoctorParsers, IpJsonGivesEachPortsStateAddressesKindAndBridge) {
  const auto ports = parse_ip_addr_json(fixture("linux-ip-addr.json"));
  ASSERT_EQ(ports.size(), 5u);
  EXPECT_EQ(port(ports, "lo").hardware, "loopback");
  const NetPort& v1 = port(ports, "v1");
  EXPECT_TRUE(v1.up && v1.carrier);
  ASSERT_EQ(v1.ipv4.size(), 1u);
  EXPECT_EQ(v1.ipv4[0].address, "10.99.1.1");
  EXPECT_EQ(v1.ipv4[0].prefix, 24);
  EXPECT_EQ(v1.hardware, "veth");
  const NetPort& v2 = port(ports, "v2");
  EXPECT_TRUE(v2.up);
  EXPECT_FALSE(v2.carrier) << "NO-CARRIER: its peer is down";
  EXPECT_TRUE(v2.ipv4.empty());
  EXPECT_EQ(port(ports, "x3").bridge, "br0");
  EXPECT_EQ(port(ports, "br0").hardware, "bridge");
  EXPECT_THROW(parse_ip_addr_json("Object \"addr\" is unknown"), std::runtime_error);
}

TEST(DoctorParsers, IfconfigGivesPortsWithHexNetmasksStatusAndBridgeMembers) {
  auto ports = parse_ifconfig(fixture("macos-ifconfig-a.txt"));
  apply_hardware_ports(fixture("macos-networksetup-listallhardwareports.txt"), ports);
  ASSERT_EQ(ports.size(), 9u);
  EXPECT_EQ(port(ports, "lo0").hardware, "loopback");
  EXPECT_EQ(port(ports, "en0").hardware, "Ethernet");
  EXPECT_EQ(port(ports, "en0").ipv4[0].prefix, 24);
  const NetPort& en4 = port(ports, "en4");
  EXPECT_TRUE(en4.is_thunderbolt());
  EXPECT_EQ(en4.hardware, "Thunderbolt 3");
  ASSERT_EQ(en4.ipv4.size(), 1u);
  EXPECT_EQ(en4.ipv4[0].address, "10.0.13.1");
  EXPECT_EQ(en4.ipv4[0].prefix, 30);
  EXPECT_TRUE(en4.carrier);
  EXPECT_FALSE(port(ports, "en1").carrier) << "status: inactive";
  EXPECT_FALSE(port(ports, "en6").carrier);
  EXPECT_TRUE(port(ports, "en5").ipv4.empty());
  EXPECT_EQ(port(ports, "en2").bridge, "bridge0");
  EXPECT_EQ(port(ports, "en3").bridge, "bridge0");
  EXPECT_EQ(port(ports, "en4").bridge, "");
  EXPECT_EQ(port(ports, "bridge0").hardware, "Thunderbolt Bridge");
  EXPECT_FALSE(port(ports, "bridge0").is_thunderbolt());
}

TEST(DoctorParsers, SystemProfilerGivesEachReceptaclesLinkSpeed) {
  const auto links = parse_thunderbolt(fixture("macos-system_profiler-SPThunderboltDataType.txt"));
  ASSERT_EQ(links.size(), 3u);
  EXPECT_EQ(links[0].receptacle, 1);
  EXPECT_TRUE(links[0].connected);
  EXPECT_EQ(links[0].speed_gbps, 80);
  EXPECT_EQ(links[1].receptacle, 2);
  EXPECT_EQ(links[1].speed_gbps, 40);
  EXPECT_FALSE(links[2].connected);
}

TEST(DoctorParsers, IbvDevinfoGivesEachPortsStateMtuAndIpv4MappedGid) {
  const auto ports = parse_ibv_devinfo(fixture("linux-ibv_devinfo-v-softrdma.txt"));
  ASSERT_EQ(ports.size(), 2u);
  EXPECT_EQ(ports[0].device, "rdma_lo");
  EXPECT_EQ(ports[0].port, 1);
  EXPECT_TRUE(ports[0].active);
  EXPECT_EQ(ports[0].active_mtu, 4096);
  ASSERT_EQ(ports[0].gids.size(), 2u);
  EXPECT_EQ(ports[0].ipv4_gid(), "127.0.0.1");
  EXPECT_EQ(ports[1].device, "rdma_eth0");
  EXPECT_EQ(ports[1].active_mtu, 1024);
  const RdmaPort no_ipv4{"rdma_en5", 1, true, 4096, {"fe80::100:0:7f00:1"}};
  EXPECT_EQ(no_ipv4.ipv4_gid(), "");
  const RdmaPort old_format{"rxe0", 1, true, 1024, {"0000:0000:0000:0000:0000:ffff:0a00:0001"}};
  EXPECT_EQ(old_format.ipv4_gid(), "10.0.0.1");
}

}  // namespace
