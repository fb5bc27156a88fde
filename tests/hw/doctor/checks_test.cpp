// hw/doctor's checks on facts as two Macs would report them: the Thunderbolt
// Bridge, a slow cable and each RDMA mistake named where it is, with its fix.
#include "hw/doctor/checks.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "hw/doctor/parsers.hpp"
#include "support/cli_runner.hpp"

namespace {

using namespace hw::doctor;
using testing::HasSubstr;

std::string fixture(const std::string& name) {
  return testsupport::read_file(std::string(MESHINFER_SOURCE_DIR) + "/tests/hw/doctor/fixtures/" + name);
}

// Two Macs cabled en4 <-> en4 on 10.0.13.0/30, RDMA devices rdma_en4 at both ends.
const char* kCluster = R"({"transport": "rdma", "port": 5000, "hosts": [
  {"ssh": "mac1", "ips": ["10.0.13.1"], "rdma": [null, "rdma_en4"]},
  {"ssh": "mac2", "ips": ["10.0.13.2"], "rdma": ["rdma_en4", null]}]})";

HostFacts mac(const std::string& address, int mtu) {
  HostFacts h;
  h.version = "meshinfer 0.1.0 (abc)";
  h.ports = {{"en4", true, true, {{address, 30}}, "", "Thunderbolt 3"}};
  h.rdma = {{"rdma_en4", 1, true, mtu, {"fe80::1", "::ffff:" + address}}};
  h.thunderbolt = {{1, true, 80}};
  return h;
}

bool failed(const std::vector<Finding>& all, const std::string& check, const std::string& subject,
            const std::string& what) {
  for (const auto& f : all)
    if (!f.ok && f.check == check && f.subject == subject && f.what.find(what) != std::string::npos) return true;
  return false;
}

class DoctorChecks : public testing::Test {
 protected:
  hw::ClusterSpec cluster = hw::parse_cluster(kCluster, "cluster.json");
  ClusterFacts facts{cluster, {mac("10.0.13.1", 4096), mac("10.0.13.2", 4096)}, {"", ""}};
};

TEST_F(DoctorChecks, TwoWellCabledMacsPassEveryCheck) {
  for (const auto& part :
       {check_reach(facts, "meshinfer 0.1.0 (abc)"), check_cabling(facts), check_rdma(facts), check_link_speed(facts)})
    for (const auto& f : part) EXPECT_TRUE(f.ok) << f.check << " " << f.subject << ": " << f.what;
  EXPECT_EQ(check_cabling(facts).front().subject, "mac1:en4 <-> mac2:en4");
}

TEST_F(DoctorChecks, TheThunderboltBridgeHoldingMeshPortsIsNamedPerPort) {
  facts.hosts[0]->ports = parse_ifconfig(fixture("macos-ifconfig-a.txt"));
  apply_hardware_ports(fixture("macos-networksetup-listallhardwareports.txt"), facts.hosts[0]->ports);
  const auto all = check_cabling(facts);
  EXPECT_TRUE(failed(all, "bridge", "mac1:en2", "is a member of bridge0 (Thunderbolt Bridge)"));
  EXPECT_TRUE(failed(all, "bridge", "mac1:en3", "is a member of bridge0"));
  EXPECT_TRUE(failed(all, "address", "mac1:en5", "is cabled (carrier) but has no IPv4 address"));
  for (const auto& f : all) EXPECT_NE(f.subject, "mac1:en0") << "the management port is not part of the mesh";
}

TEST_F(DoctorChecks, AnInactiveEndTakesItsCableDown) {
  facts.hosts[1]->ports[0].carrier = false;
  EXPECT_TRUE(failed(check_cabling(facts), "cabling", "mac1:en4 <-> mac2:en4", "mac2:en4 has no carrier"));
}

TEST_F(DoctorChecks, ASubnetJoiningThreePortsIsNotACable) {
  facts.hosts[1]->ports.push_back({"en5", true, true, {{"10.0.13.3", 30}}, "", "Thunderbolt 4"});
  EXPECT_TRUE(failed(check_cabling(facts), "cabling", "10.0.13.0/30", "joins 3 ports"));
}

TEST_F(DoctorChecks, ASlowerThunderboltLinkIsNamedByReceptacle) {
  facts.hosts[1]->thunderbolt = parse_thunderbolt(fixture("macos-system_profiler-SPThunderboltDataType.txt"));
  const auto all = check_link_speed(facts);
  EXPECT_TRUE(failed(all, "link-speed", "mac2:receptacle 2", "up to 40 Gb/s where the fastest"));
  EXPECT_EQ(all.size(), 3u) << "receptacle 3 has nothing connected";
}

TEST_F(DoctorChecks, EachRdmaMistakeIsNamedWithTheDevice) {
  facts.hosts[1]->rdma[0].active_mtu = 1024;
  EXPECT_TRUE(failed(check_rdma(facts), "rdma", "mac1:rdma_en4 <-> mac2:rdma_en4", "active MTU 4096 at mac1, 1024"));
  facts.hosts[1]->rdma[0].gids = {"fe80::1"};
  EXPECT_TRUE(failed(check_rdma(facts), "rdma", "mac2:rdma_en4", "no IPv4-mapped GID"));
  facts.hosts[1]->rdma[0].active = false;
  EXPECT_TRUE(failed(check_rdma(facts), "rdma", "mac2:rdma_en4", "is not PORT_ACTIVE"));
  facts.hosts[1]->rdma[0].device = "rdma_en5";
  EXPECT_TRUE(failed(check_rdma(facts), "rdma", "mac2:rdma_en4", "no such RDMA device (ibv_devinfo lists: rdma_en5)"));
}

TEST_F(DoctorChecks, AProbedPairAtUnderHalfTheMedianIsAnOutlier) {
  const std::vector<hw::PairFigures> pairs = {{0, 1, 5e-6, 6e9, 6e9}};
  EXPECT_TRUE(check_probe(facts, pairs, std::nullopt).front().ok);
  EXPECT_TRUE(failed(check_probe(facts, pairs, 120.0), "probe", "mac1 - mac2", "under half the link card's 120 Gb/s"));
}

}  // namespace
