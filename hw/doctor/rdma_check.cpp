#include <fmt/format.h>

#include "hw/doctor/checks.hpp"

namespace hw::doctor {

namespace {

std::string listed_devices(const HostFacts& h) {
  std::string out;
  for (const auto& d : h.rdma) out += (out.empty() ? "" : ", ") + d.device;
  return out.empty() ? "none" : out;
}

// The findings of one device (rank r's towards a peer); the port when it is usable.
const RdmaPort* check_device(const ClusterFacts& f, int r, const std::string& device, std::vector<Finding>& out) {
  const HostFacts& h = *f.hosts[r];
  const std::string subject = f.name(r) + ":" + device;
  const RdmaPort* port = h.rdma_device(device);
  if (!port) {
    out.push_back({"rdma", subject, false,
                   fmt::format("no such RDMA device (ibv_devinfo lists: {})", listed_devices(h)),
                   "enable RDMA once from recovery mode (rdma_ctl enable, then reboot) or correct the device name "
                   "in " +
                       f.cluster.file});
    return nullptr;
  }
  if (!port->active) {
    out.push_back({"rdma", subject, false, fmt::format("port {} is not PORT_ACTIVE", port->port),
                   "seat the cable and bring its network port up; an idle macOS port may need the cluster restarted"});
    return nullptr;
  }
  if (port->ipv4_gid().empty()) {
    out.push_back({"rdma", subject, false, "publishes no IPv4-mapped GID (::ffff:a.b.c.d)",
                   "give the device's network port its cable's IPv4 address; the GID appears once it has one"});
    return nullptr;
  }
  return port;
}

}  // namespace

std::vector<Finding> check_rdma(const ClusterFacts& f) {
  std::vector<Finding> out;
  const int n = f.cluster.world();
  if (f.cluster.transport != "rdma" || f.cluster.rdma_devices.world() != n) return out;
  std::vector<std::vector<const RdmaPort*>> usable(n, std::vector<const RdmaPort*>(n, nullptr));
  for (int r = 0; r < n; ++r)
    for (int peer = 0; peer < n; ++peer)
      if (peer != r && f.hosts[r]) usable[r][peer] = check_device(f, r, f.cluster.rdma_devices.device(r, peer), out);
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      const RdmaPort *x = usable[a][b], *y = usable[b][a];
      if (!x || !y) continue;
      const std::string pair = fmt::format("{}:{} <-> {}:{}", f.name(a), x->device, f.name(b), y->device);
      if (x->active_mtu != y->active_mtu)
        out.push_back({"rdma", pair, false,
                       fmt::format("active MTU {} at {}, {} at {}", x->active_mtu, f.name(a), y->active_mtu, f.name(b)),
                       "set the same MTU on the network ports at both ends"});
      else
        out.push_back({"rdma", pair, true,
                       fmt::format("both ACTIVE, GIDs ::ffff:{} and ::ffff:{}, MTU {}", x->ipv4_gid(), y->ipv4_gid(),
                                   x->active_mtu),
                       ""});
    }
  }
  return out;
}

}  // namespace hw::doctor
