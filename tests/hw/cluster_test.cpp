// The cluster file (MLX hostfile) in both forms, and bad input named by file,
// JSON path and reason.
#include "hw/cluster.hpp"

#include <gtest/gtest.h>

#include "engine/base/error.hpp"

namespace {

TEST(Cluster, ReadsTheMlxHostfileArray) {
  const auto c = hw::parse_cluster(R"([
    {"ssh": "mac1", "ips": ["10.0.12.1", "10.0.13.1"], "rdma": [null, "rdma_en3", "rdma_en4"]},
    {"ssh": "mac2", "ips": ["10.0.12.2", "10.0.23.2"], "rdma": ["rdma_en3", null, "rdma_en5"]},
    {"ssh": "mac3", "ips": ["10.0.13.3", "10.0.23.3"], "rdma": ["rdma_en4", "rdma_en5", null]}])",
                                   "hosts.json");
  EXPECT_EQ(c.transport, "tcp");
  EXPECT_EQ(c.port, 5000);
  ASSERT_EQ(c.world(), 3);
  EXPECT_EQ(c.hosts[1].ssh, "mac2");
  ASSERT_EQ(c.rdma_devices.world(), 3);
  EXPECT_FALSE(c.rdma_devices.row(2)[2].has_value());
  EXPECT_EQ(c.rdma_devices.device(2, 1), "rdma_en5");
  // Each pair talks over the address of the cable it shares.
  EXPECT_EQ(c.address(1, 2), "10.0.23.3");
  EXPECT_EQ(c.address(2, 0), "10.0.13.1");
  EXPECT_FALSE(c.is_local(0));
  EXPECT_FALSE(c.has_secondary());
}

TEST(Cluster, ReadsEachHostsAddressOnTheSecondaryNetwork) {
  const auto c = hw::parse_cluster(R"([
    {"ssh": "mac1", "ips": ["10.0.12.1"], "secondary_ip": "192.168.1.11"},
    {"ssh": "mac2", "ips": ["10.0.12.2"], "secondary_ip": "192.168.1.12"}])",
                                   "hosts.json");
  ASSERT_TRUE(c.has_secondary());
  EXPECT_EQ(c.hosts[1].secondary_ip, "192.168.1.12");
}

TEST(Cluster, ReadsTheObjectFormWithoutRdma) {
  const auto c = hw::parse_cluster(
      R"({"transport": "rdma", "port": 6000, "hosts": [{"ssh": "localhost", "ips": ["127.0.0.1"]},
                                                       {"ssh": "localhost", "ips": ["127.0.0.1"]}]})",
      "c.json");
  EXPECT_EQ(c.transport, "rdma");
  EXPECT_EQ(c.port, 6000);
  EXPECT_EQ(c.rdma_devices.world(), 0);
  EXPECT_EQ(c.rdma_frame_bytes, 4096u);
  EXPECT_EQ(c.rdma_qp, "uc");
  EXPECT_TRUE(c.is_local(1));
  EXPECT_EQ(c.address(0, 1), "127.0.0.1");
}

void expect_refused(const std::string& text, const std::string& path, const std::string& reason) {
  try {
    hw::parse_cluster(text, "bad.json");
    ADD_FAILURE() << "accepted: " << text;
  } catch (const engine::InputError& e) {
    EXPECT_EQ(e.file(), "bad.json");
    EXPECT_EQ(e.json_path(), path) << e.what();
    EXPECT_NE(e.reason().find(reason), std::string::npos) << e.what();
  }
}

TEST(Cluster, ChoosesTheVerbsFrameStrideAndQueuePairType) {
  const auto c = hw::parse_cluster(
      R"({"transport": "rdma", "rdma_frame_bytes": 524288, "rdma_qp": "rc",
          "hosts": [{"ssh": "a", "ips": ["10.0.0.1"], "rdma": [null, "rxe0"]},
                    {"ssh": "b", "ips": ["10.0.0.2"], "rdma": ["rxe0", null]}]})",
      "c.json");
  EXPECT_EQ(c.rdma_frame_bytes, 524288u);
  EXPECT_EQ(c.rdma_qp, "rc");
}

TEST(Cluster, RefusesBadInputNamingThePathAndReason) {
  expect_refused("[{\"ssh\": \"a\", \"ips\": [\"10.0.0.300\"]}]", "/0/ips/0", "not an IPv4 address");
  expect_refused("[{\"ssh\": \"a\"}]", "/0/ips", "missing required key 'ips'");
  expect_refused("[{\"ssh\": \"a\", \"ips\": []}]", "/0/ips", "non-empty array");
  expect_refused("[{\"ips\": [\"10.0.0.1\"]}]", "/0/ssh", "missing required key 'ssh'");
  expect_refused("[{\"ssh\": \"\", \"ips\": [\"10.0.0.1\"]}]", "/0/ssh", "must name the host");
  expect_refused(R"({"transport": "udp", "hosts": []})", "/transport",
                 "unknown transport 'udp' (did you mean 'tcp'?); known: tcp, rdma");
  expect_refused(R"({"port": 70000, "hosts": [{"ssh": "a", "ips": ["10.0.0.1"]}]})", "/port", "1..65534");
  expect_refused(R"({"hosts": [{"ssh": "a", "ips": ["10.0.0.1"], "rdma": ["rdma_en2"]}]})", "/hosts/0/rdma/0",
                 "must be null");
  expect_refused(R"([{"ssh": "a", "ips": ["10.0.0.1"], "rdma": [null, "x"]},
                     {"ssh": "b", "ips": ["10.0.0.2"]}])",
                 "/1/rdma", "every host needs an rdma row");
  expect_refused(R"({"rdma_frame_bytes": 5000, "hosts": [{"ssh": "a", "ips": ["10.0.0.1"]}]})", "/rdma_frame_bytes",
                 "multiple of 4 KiB");
  expect_refused(R"({"rdma_qp": "ud", "hosts": [{"ssh": "a", "ips": ["10.0.0.1"]}]})", "/rdma_qp",
                 "unknown queue pair type 'ud' (did you mean 'uc'?)");
  expect_refused(R"([{"ssh": "a", "ips": ["10.0.0.1"], "secondary_ip": "10.1.0.1"},
                     {"ssh": "b", "ips": ["10.0.0.2"]}])",
                 "/1/secondary_ip", "every host needs a secondary_ip when one has");
  expect_refused(R"([{"ssh": "a", "ips": ["10.0.0.1"], "secondary_ip": "eth1"}])", "/0/secondary_ip",
                 "not an IPv4 address: eth1");
  expect_refused(R"({"port": 65533, "hosts": [{"ssh": "a", "ips": ["10.0.0.1"], "secondary_ip": "10.1.0.1"}]})",
                 "/port", "at most 65532 with a secondary network");
  expect_refused("[]", "", "non-empty array of hosts");
  expect_refused("{\"hosts\": [1,]}", "", "malformed JSON at line 1");
  expect_refused(R"({"hosts": [{"ssh": "a", "ips": ["10.0.0.1"]}], "prot": 5000})", "/prot",
                 "unknown key 'prot' (did you mean 'port'?)");
}

}  // namespace
