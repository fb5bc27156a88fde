// An interface set down takes its device's port DOWN with IBV_EVENT_PORT_ERR
// and delivers nothing until it is up again, as a pulled Thunderbolt cable
// does; VerbsRuntime fails the peer on that event instead of waiting out its
// silence timeout. Each case runs in network namespaces of its own (root).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sched.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "engine/base/error.hpp"
#include "hw/netns_mesh.hpp"
#include "hw/tcp_runtime.hpp"
#include "hw/verbs/verbs_runtime.hpp"
#include "softrdma_fixture.hpp"
#include "support/skip.hpp"

namespace softrdma_test {
namespace {

// The next asynchronous event of `ctx` within `timeout_s`, as event_type; -1 when none came.
int next_event(ibv_context* ctx, double timeout_s) {
  pollfd fd{ctx->async_fd, POLLIN, 0};
  if (::poll(&fd, 1, static_cast<int>(timeout_s * 1000)) != 1) return -1;
  ibv_async_event event{};
  if (ibv_get_async_event(ctx, &event) != 0) return -1;
  ibv_ack_async_event(&event);
  return event.element.port_num == 1 ? event.event_type : -1;
}

TEST(PortDown, AnInterfaceSetDownTakesThePortDownWithItsEventAndDeliversNothing) {
  if (const std::string why = hw::NetnsMesh::unavailable_reason(); !why.empty()) SKIP_UNLESS_CI_PROVIDES(true, why);
  const int code = in_child([] {
    if (unshare(CLONE_NEWNET) != 0) return 10;
    // A veth, its peer up so that it runs (the dummy driver is not in every
    // kernel), and lo up: both ends are on sr0's address, and Linux delivers
    // to a local address through lo.
    if (std::system("ip link set lo up && ip link add sr0 type veth peer name sr1 && "
                    "ip addr add 10.77.0.1/24 dev sr0 && ip link set sr1 up && ip link set sr0 up") != 0)
      return 11;
    if (!port_active_within("rdma_sr0", 5)) return 13;
    End a, b;
    open_end(a, "rdma_sr0");
    open_end(b, "rdma_sr0");
    if (!a.qp || !b.qp || connect(a, b) || connect(b, a)) return 1;
    if (post_recv(b, 0, 4096, 1) || post_send(a, 0, 1024, 2) || poll(b, 1, 5).size() != 1) return 2;
    if (std::system("ip link set sr0 down") != 0) return 12;
    // Each context follows its port on its own: both get the event.
    if (next_event(a.ctx, 5) != IBV_EVENT_PORT_ERR || next_event(b.ctx, 5) != IBV_EVENT_PORT_ERR) return 3;
    ibv_port_attr attr{};
    if (ibv_query_port(b.ctx, 1, &attr) != 0 || attr.state != IBV_PORT_DOWN) return 4;
    if (post_recv(b, 0, 4096, 3) || post_send(a, 0, 1024, 4)) return 5;
    if (!poll(b, 1, 0.5).empty()) return 6;  // nothing crosses a port that is DOWN
    if (std::system("ip link set sr0 up") != 0) return 12;
    if (next_event(a.ctx, 5) != IBV_EVENT_PORT_ACTIVE || next_event(b.ctx, 5) != IBV_EVENT_PORT_ACTIVE) return 7;
    if (post_send(a, 0, 1024, 5) || poll(b, 1, 5).size() != 1) return 8;  // and crosses again once up
    close_end(a);
    close_end(b);
    return 0;
  });
  EXPECT_EQ(code, 0) << "10-13 namespace, 99 threw, 1-2 setup, 3 no PORT_ERR, 4 port not DOWN, 6 delivered while DOWN, "
                        "7 no PORT_ACTIVE, 8 nothing after coming back";
}

// Whether ibv_get_device_list lists `device` now.
bool listed(const char* device) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  bool found = false;
  for (int i = 0; list && i < n; ++i) found |= std::string(ibv_get_device_name(list[i])) == device;
  if (list) ibv_free_device_list(list);
  return found;
}

// As on macOS, where the GID appears with the address: an interface without an
// IPv4 address has no device, and gets one when it is given an address.
TEST(PortDown, ADeviceIsListedOnlyWhileItsInterfaceHasAnIpv4Address) {
  if (const std::string why = hw::NetnsMesh::unavailable_reason(); !why.empty()) SKIP_UNLESS_CI_PROVIDES(true, why);
  const int code = in_child([] {
    if (unshare(CLONE_NEWNET) != 0) return 10;
    if (std::system("ip link add sr0 type veth peer name sr1 && ip link set sr1 up && ip link set sr0 up") != 0)
      return 11;
    if (listed("rdma_sr0")) return 1;
    if (std::system("ip addr add 10.77.0.1/24 dev sr0") != 0) return 11;
    if (!listed("rdma_sr0")) return 2;
    if (std::system("ip addr flush dev sr0") != 0) return 11;
    return listed("rdma_sr0") ? 3 : 0;
  });
  EXPECT_EQ(code, 0) << "10-11 namespace, 1 listed without an address, 2 not listed with one, 3 listed after the "
                        "address went";
}

// Rank r of two, in namespace r of `mesh`: a VerbsRuntime over the veth's
// device (rdma_v<peer>), one round trip, then `ready` and, once `go` says the
// link is down, a receive that must end with the port's failure.
int rank_over_the_veth(const hw::NetnsMesh& mesh, int r, int ready, int go) {
  const int ns = open(("/var/run/netns/" + mesh.ns(r)).c_str(), O_RDONLY | O_CLOEXEC);
  if (ns < 0 || setns(ns, CLONE_NEWNET) != 0) return 10;
  const nlohmann::json hosts = mesh.cluster(0)["hosts"];
  hw::TcpOptions tcp;
  tcp.coordinator_host = hosts[0]["ips"][0].get<std::string>();
  tcp.coordinator_port = 47311;
  tcp.listen_hosts = {hosts[r]["ips"][0].get<std::string>()};
  hw::TcpRuntime side(r, 2, tcp);
  hw::VerbsOptions o;
  o.devices.resize(2);
  o.devices[1 - r] = "rdma_v" + std::to_string(1 - r);
  o.peer_timeout_s = 120;  // a failure sooner is the port's event, not the silence timeout
  hw::VerbsRuntime rt(r, 2, o, side);
  const engine::Bytes hello(100, std::byte{7});
  if (r == 0) rt.send(1, 1, engine::Payload::of(hello));
  if (rt.recv(1 - r, 1, 30).bytes != hello) return 2;
  if (r == 1) rt.send(0, 1, engine::Payload::of(hello));
  char byte = 1;
  if (write(ready, &byte, 1) != 1 || read(go, &byte, 1) != 1) return 3;
  const auto down_at = std::chrono::steady_clock::now();
  try {
    rt.recv(1 - r, 2, 60);
    return 4;
  } catch (const engine::PeerFailure& e) {
    const double after = std::chrono::duration<double>(std::chrono::steady_clock::now() - down_at).count();
    std::fprintf(stderr, "rank %d: %s (%.2f s after the link went down)\n", r, e.what(), after);
    return std::string(e.what()).find("went DOWN (IBV_EVENT_PORT_ERR)") != std::string::npos ? 0 : 5;
  }
}

TEST(PortDown, VerbsRuntimeFailsThePeerWhenTheVethBetweenTwoNamespacesGoesDown) {
  if (const std::string why = hw::NetnsMesh::unavailable_reason(); !why.empty()) SKIP_UNLESS_CI_PROVIDES(true, why);
  hw::NetnsMesh mesh(2);
  int ready[2], go[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(go), 0);
  pid_t ranks[2];
  for (int r = 0; r < 2; ++r) ranks[r] = fork_child([&, r] { return rank_over_the_veth(mesh, r, ready[1], go[0]); });
  pollfd fd{ready[0], POLLIN, 0};
  char byte = 0;
  int up = 0;
  while (up < 2 && ::poll(&fd, 1, 60000) == 1 && read(ready[0], &byte, 1) == 1) ++up;
  const bool down = up == 2 && std::system(("ip -n " + mesh.ns(0) + " link set v1 down").c_str()) == 0;
  for (int r = 0; r < 2; ++r) (void)!write(go[1], &byte, 1);
  for (int r = 0; r < 2; ++r)
    EXPECT_EQ(wait_child(ranks[r], 90), 0)
        << "rank " << r << ": 10 namespace, 99 threw, 2-3 setup, 4 no failure, 5 not the port";
  EXPECT_TRUE(down) << up << " rank(s) were ready";
  for (int f : {ready[0], ready[1], go[0], go[1]}) close(f);
}

}  // namespace
}  // namespace softrdma_test
