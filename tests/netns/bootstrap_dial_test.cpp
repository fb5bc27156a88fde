// A rank dialling a host that never answers (its SYNs vanish, as at a machine
// that is off or unplugged) gives up at its bootstrap timeout and names the
// host, instead of waiting out the kernel's two minutes of SYN retries.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "hw/netns_mesh.hpp"
#include "support/cli_runner.hpp"
#include "support/real_run.hpp"
#include "support/skip.hpp"

namespace {

using testing::HasSubstr;

TEST(BootstrapDial, AHostThatNeverAnswersFailsAtTheBootstrapTimeoutNamingIt) {
  const std::string why = hw::NetnsMesh::unavailable_reason();
  if (!why.empty()) SKIP_UNLESS_CI_PROVIDES(::geteuid() == 0, why);
  hw::NetnsMesh mesh(2);
  const std::string dir = testsupport::fresh_dir("bootstrap-dial");
  const std::string cluster = testsupport::write_json(dir, "cluster", mesh.cluster(5000));
  const std::string scenario = testsupport::write_json(dir, "s", testsupport::small_scenario("dial", 2, 1, 2));
  const std::string rank0 = mesh.cluster(5000)["hosts"][0]["ips"][0];
  // Rank 1's frames to rank 0 go to a MAC no one has: its SYNs vanish.
  const auto poison = testsupport::run_shell("ip -n " + mesh.ns(1) + " neigh replace " + rank0 +
                                             " lladdr 02:00:00:00:00:99 dev v0 nud permanent 2>&1");
  ASSERT_EQ(poison.exit_code, 0) << poison.output;
  const auto r =
      testsupport::run_shell("timeout 60 ip netns exec " + mesh.ns(1) + " " + MESHINFER_BINARY +
                             " node --rank 1 --cluster " + cluster + " " + scenario + " --bootstrap-timeout 2 2>&1");
  EXPECT_NE(r.exit_code, 124) << "still dialling after 60 s: " << r.output;
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr(rank0 + ":5000 did not answer within the bootstrap timeout"));
}

}  // namespace
