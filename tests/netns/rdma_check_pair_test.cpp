// rdma-check's pair mode across a real cable: two namespaces joined by a veth,
// softrdma's device on each end, each end's rdma-check in its own namespace.
// The frames cross the cable (not two queue pairs of one device, which the
// Macs may not loop back), and both ends report the same observations.
// Skipped, with the reason, where namespaces cannot be made; a failure on CI.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <string>

#include "hw/netns_mesh.hpp"
#include "netns/softrdma_library.hpp"
#include "support/child_process.hpp"
#include "support/cli_runner.hpp"
#include "support/real_run.hpp"
#include "support/skip.hpp"

namespace {

using testing::HasSubstr;

TEST(RdmaCheckPair, TwoHostsCheckTheRulesAcrossTheCableBetweenThemAndAgree) {
  if (const std::string why = hw::NetnsMesh::unavailable_reason(); !why.empty())
    SKIP_UNLESS_CI_PROVIDES(::geteuid() == 0, why);
  SKIP_UNLESS_SOFTRDMA_BUILT();
  const std::string dir = testsupport::fresh_dir("rdma-check-pair");
  hw::NetnsMesh mesh(2);
  nlohmann::json cluster = mesh.cluster(5300, true);
  cluster["secret"] = std::string(40, 's');
  const std::string file = testsupport::write_json(dir, "cluster", cluster);
  const auto end = [&](int rank) {
    return std::vector<std::string>{"ip",
                                    "netns",
                                    "exec",
                                    mesh.ns(rank),
                                    "env",
                                    std::string("LD_PRELOAD=") + testsupport::kSoftRdma,
                                    MESHINFER_BINARY,
                                    "rdma-check",
                                    "--cluster",
                                    file,
                                    "--rank",
                                    std::to_string(rank),
                                    "--peer",
                                    std::to_string(1 - rank),
                                    "--json",
                                    dir + "/" + std::to_string(rank) + ".json",
                                    "--wait",
                                    "0.5"};
  };
  testsupport::ChildProcess a(end(0)), b(end(1));
  ASSERT_EQ(a.wait(120), 0) << a.output();
  ASSERT_EQ(b.wait(60), 0) << b.output();
  const auto report = [&](int rank) {
    return nlohmann::json::parse(testsupport::read_file(dir + "/" + std::to_string(rank) + ".json"));
  };
  const nlohmann::json sent = report(0), received = report(1);
  EXPECT_EQ(sent["pair"]["frames"], "sent to the peer");
  EXPECT_EQ(received["pair"]["frames"], "received from the peer");
  ASSERT_EQ(sent["devices"].size(), 1u);
  EXPECT_EQ(sent["devices"][0]["device"], "rdma_v1");
  EXPECT_EQ(received["devices"][0]["device"], "rdma_v0");
  const nlohmann::json& rules = sent["devices"][0]["rules"];
  ASSERT_EQ(rules.size(), 7u) << rules.dump(2);
  for (std::size_t i = 0; i < rules.size(); ++i) {
    EXPECT_EQ(rules[i]["verdict"], "as documented") << rules[i].dump();
    if (i >= 4) {  // send-recv-only, mtu, frame-limit: what crossed the cable, seen alike at both ends
      EXPECT_EQ(rules[i]["observed"], received["devices"][0]["rules"][i]["observed"]) << rules[i]["rule"];
    }
  }
  // veths carry 1500-byte frames: softrdma's active MTU there is 1024, a 4 KiB frame four packets.
  EXPECT_THAT(rules[5]["observed"].get<std::string>(), HasSubstr("active MTU 1024; at 1024 both ends: crossed"));
  EXPECT_THAT(rules[6]["observed"].get<std::string>(), HasSubstr("4096 B crossed; 8192 B dropped"));
}

}  // namespace
