// The network interfaces softrdma turns into devices: one per interface that
// has an IPv4 address, as macOS publishes rdma_enN only once enN has one.
#pragma once

#include <infiniband/verbs.h>
#include <netinet/in.h>

#include <optional>
#include <string>
#include <vector>

namespace softrdma {

struct Interface {
  std::string name;
  in_addr addr{};
  bool running = false;  // IFF_UP and IFF_RUNNING: the port is ACTIVE
  int mtu = 1500;
  unsigned index = 0;
};

// Every interface with an IPv4 address (its first one), in the kernel's order.
std::vector<Interface> ipv4_interfaces();
std::optional<Interface> find_interface(const std::string& name);

// The largest IB MTU whose packet (payload, our header, UDP and IP) fits the
// interface's MTU, as rxe derives it: 1500 -> 1024, loopback's 65536 -> 4096.
ibv_mtu ib_mtu_for(int if_mtu);

}  // namespace softrdma
