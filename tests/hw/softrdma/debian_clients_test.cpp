// Unmodified Debian clients (ibverbs-utils) run on softrdma preloaded in place
// of libibverbs, as a user rehearses on Linux what Apple's stack will do.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "hw/netns_mesh.hpp"
#include "softrdma_fixture.hpp"
#include "support/child_process.hpp"
#include "support/skip.hpp"

namespace {

using softrdma_test::preloaded;
using testsupport::ChildProcess;

// A TCP port free right now, for ibv_uc_pingpong's side channel.
std::string free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return std::to_string(ntohs(a.sin_port));
}

TEST(DebianClients, IbvDevicesListsRdmaLo) {
  ChildProcess p(preloaded({}, {"ibv_devices"}));
  ASSERT_EQ(p.wait(30), 0) << p.output();
  EXPECT_NE(p.output().find("rdma_lo"), std::string::npos) << p.output();
}

TEST(DebianClients, IbvDevinfoShowsAnActiveEthernetPortWithTheIpv4MappedGid) {
  ChildProcess p(preloaded({}, {"ibv_devinfo", "-v", "-d", "rdma_lo"}));
  ASSERT_EQ(p.wait(30), 0) << p.output();
  for (const char* want :
       {"PORT_ACTIVE", "link_layer:\t\tEthernet", "::ffff:127.0.0.1, RoCE v2", "board_id:\t\t\tsoftrdma"})
    EXPECT_NE(p.output().find(want), std::string::npos) << want << " in\n" << p.output();
}

// ibv_uc_pingpong posts receives in INIT and registers LOCAL_WRITE alone: macOS
// refuses both, and so does softrdma until SOFTRDMA_ALLOW lifts them.
TEST(DebianClients, IbvUcPingpongIsRefusedAsOnMacOs) {
  ChildProcess server(preloaded({}, {"ibv_uc_pingpong", "-d", "rdma_lo", "-g", "1", "-p", free_port()}));
  EXPECT_NE(server.wait(30), 0);
  EXPECT_NE(server.output().find("LOCAL_WRITE alone"), std::string::npos) << server.output();
}

const std::vector<std::string> kAllow = {"SOFTRDMA_ALLOW=recv-before-rts,local-write-mr"};

// ibv_uc_pingpong with validation (-c), 500 iterations, on `device`, port `port`.
std::vector<std::string> pingpong(const std::string& device, const std::string& port) {
  return {"ibv_uc_pingpong", "-d", device, "-g", "1", "-n", "500", "-c", "-p", port};
}

// Runs the server and the client (which tries again while the server does not
// listen yet); both must report 500 iterations.
void expect_pingpong_passes(const std::vector<std::string>& server_argv, const std::vector<std::string>& client_argv) {
  ChildProcess server(server_argv);
  for (int attempt = 0;; ++attempt) {
    ChildProcess client(client_argv);
    const int code = client.wait(60);
    if (code != 0 && attempt < 5 && client.output().find("Couldn't connect") != std::string::npos) {
      usleep(200 * 1000);
      continue;
    }
    ASSERT_EQ(code, 0) << client.output();
    EXPECT_NE(client.output().find("500 iters"), std::string::npos) << client.output();
    break;
  }
  ASSERT_EQ(server.wait(60), 0) << server.output();
  EXPECT_NE(server.output().find("500 iters"), std::string::npos) << server.output();
}

class UcPingpong : public testing::TestWithParam<bool> {};  // with completion events (-e) or polling

TEST_P(UcPingpong, PassesBetweenTwoProcessesOnLoopback) {
  std::vector<std::string> args = pingpong("rdma_lo", free_port());
  if (GetParam()) args.push_back("-e");
  std::vector<std::string> client = args;
  client.push_back("127.0.0.1");
  expect_pingpong_passes(preloaded(kAllow, args), preloaded(kAllow, client));
}

// Two "hosts" joined by a veth: each end's softrdma device is rdma_<veth>.
TEST(DebianClients, IbvUcPingpongPassesBetweenTwoNetworkNamespaces) {
  if (const std::string why = hw::NetnsMesh::unavailable_reason(); !why.empty()) SKIP_UNLESS_CI_PROVIDES(true, why);
  hw::NetnsMesh mesh(2);
  const std::string port = free_port(), server_address = mesh.cluster(0)["hosts"][1]["ips"][0].get<std::string>();
  auto in_ns = [&](int r, std::vector<std::string> argv) {
    argv.insert(argv.begin(), {"ip", "netns", "exec", mesh.ns(r)});
    return argv;
  };
  std::vector<std::string> client = pingpong("rdma_v1", port);  // rank 0's veth towards rank 1
  client.push_back(server_address);
  expect_pingpong_passes(in_ns(1, preloaded(kAllow, pingpong("rdma_v0", port))), in_ns(0, preloaded(kAllow, client)));
}

INSTANTIATE_TEST_SUITE_P(Modes, UcPingpong, testing::Bool(),
                         [](const testing::TestParamInfo<bool>& i) { return i.param ? "Events" : "Polling"; });

}  // namespace
