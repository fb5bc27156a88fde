// Devices, contexts and their queries: ibv_get_device_list .. ibv_query_gid.
// A device is rdma_<ifname> for each interface with an IPv4 address; its one
// port is ACTIVE while the interface is up and running.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>

#include "hw/softrdma/config.hpp"
#include "hw/softrdma/export.hpp"
#include "hw/softrdma/interfaces.hpp"
#include "hw/softrdma/internal.hpp"
#include "hw/softrdma/stack_failure.hpp"

#undef ibv_get_device_list
#undef ibv_query_port

namespace softrdma {
namespace {

std::mutex registry_mu;
// Devices live as long as the process: an ibv_device outlives its list.
std::map<std::string, std::unique_ptr<Device>>& registry() {
  static std::map<std::string, std::unique_ptr<Device>> devices;
  return devices;
}

Device* device_for(const Interface& i) {
  std::unique_ptr<Device>& d = registry()[i.name];
  if (!d) {
    d = std::make_unique<Device>();
    std::memset(&d->base, 0, sizeof d->base);
    d->ifname = i.name;
    d->base.node_type = IBV_NODE_CA;
    d->base.transport_type = IBV_TRANSPORT_IB;  // as RoCE devices report it
    std::snprintf(d->base.name, sizeof d->base.name, "rdma_%s", i.name.c_str());
    std::snprintf(d->base.dev_name, sizeof d->base.dev_name, "softrdma_%s", i.name.c_str());
    std::snprintf(d->base.dev_path, sizeof d->base.dev_path, "/sys/class/infiniband_verbs/softrdma_%s", i.name.c_str());
    std::snprintf(d->base.ibdev_path, sizeof d->base.ibdev_path, "/sys/class/infiniband/rdma_%s", i.name.c_str());
  }
  return d.get();
}

Device* registered_device(ibv_device* device) {
  std::lock_guard lock(registry_mu);
  for (auto& [name, d] : registry())
    if (&d->base == device) return d.get();
  return nullptr;
}

// The GUID rdma-core derives from a MAC (EUI-64); we derive it from the interface index and address.
__be64 guid_of(const Interface& i) {
  std::uint64_t g = 0x0200000000000000ull | (std::uint64_t{i.index & 0xffff} << 32) | ntohl(i.addr.s_addr);
  return htobe64(g);
}

ibv_gid link_local_gid(const Interface& i) {
  ibv_gid gid{};
  gid.raw[0] = 0xfe, gid.raw[1] = 0x80;
  std::memcpy(gid.raw + 8, &i.index, sizeof i.index);
  std::memcpy(gid.raw + 12, &i.addr, 4);
  return gid;
}

std::optional<Interface> interface_of(ibv_context* c) { return find_interface(ctx_of(c)->device->ifname); }

int open_socket(Context& ctx) {
  ctx.sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (ctx.sock < 0) return errno;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr = ctx.addr;
  socklen_t len = sizeof a;
  if (bind(ctx.sock, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      getsockname(ctx.sock, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    return errno;
  ctx.udp_port = ntohs(a.sin_port);
  // Thunderbolt's link-level credits make UC lossless in practice: a large
  // buffer (forced where we may) keeps the kernel from dropping a burst.
  const int bytes = 64 << 20;
  if (setsockopt(ctx.sock, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) != 0)
    setsockopt(ctx.sock, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
  return 0;
}

void free_context(Context* ctx) {
  if (ctx->sock >= 0) close(ctx->sock);
  for (int fd : {ctx->wake[0], ctx->wake[1], ctx->base.async_fd, ctx->async_write})
    if (fd >= 0) close(fd);
  pthread_mutex_destroy(&ctx->base.mutex);
  delete ctx;
}

}  // namespace
}  // namespace softrdma

using namespace softrdma;

extern "C" {

SOFTRDMA_EXPORT ibv_device** ibv_get_device_list(int* num_devices) {
  if (num_devices) *num_devices = 0;
  if (!config().error.empty()) {
    errno = EINVAL;
    return nullptr;
  }
  const std::vector<Interface> interfaces = stack_failed() ? std::vector<Interface>{} : ipv4_interfaces();
  auto** list = static_cast<ibv_device**>(std::calloc(interfaces.size() + 1, sizeof(ibv_device*)));
  if (!list) return nullptr;
  std::lock_guard lock(registry_mu);
  for (std::size_t i = 0; i < interfaces.size(); ++i) list[i] = &device_for(interfaces[i])->base;
  if (num_devices) *num_devices = static_cast<int>(interfaces.size());
  return list;
}

SOFTRDMA_EXPORT void ibv_free_device_list(ibv_device** list) { std::free(list); }

SOFTRDMA_EXPORT const char* ibv_get_device_name(ibv_device* device) { return device->name; }

SOFTRDMA_EXPORT __be64 ibv_get_device_guid(ibv_device* device) {
  Device* d = registered_device(device);
  const std::optional<Interface> i = d ? find_interface(d->ifname) : std::nullopt;
  return i ? guid_of(*i) : 0;
}

// ibv_devinfo reads board_id from sysfs; ours has no sysfs directory.
SOFTRDMA_EXPORT int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size) {
  if (std::strncmp(dir, "/sys/class/infiniband/rdma_", 27) == 0 && std::strcmp(file, "board_id") == 0)
    return std::snprintf(buf, size, "softrdma");
  using Real = int (*)(const char*, const char*, char*, size_t);
  static auto real = reinterpret_cast<Real>(dlvsym(RTLD_NEXT, "ibv_read_sysfs_file", "IBVERBS_1.0"));
  return real ? real(dir, file, buf, size) : -1;
}

SOFTRDMA_EXPORT ibv_context* ibv_open_device(ibv_device* device) {
  Device* d = registered_device(device);
  const std::optional<Interface> i = d && !stack_failed() ? find_interface(d->ifname) : std::nullopt;
  if (!i) {
    errno = ENODEV;
    return nullptr;
  }
  WireFaults faults;
  if (!read_wire_faults(&faults)) {
    errno = EINVAL;
    return nullptr;
  }
  auto* ctx = new Context;
  ctx->faults = faults;
  ctx->rng.seed(faults.seed);
  std::memset(&ctx->base, 0, sizeof ctx->base);
  ctx->device = d;
  ctx->addr = i->addr;
  ctx->port_down = !i->running;
  ctx->base.device = device;
  ctx->base.cmd_fd = -1;
  ctx->base.async_fd = -1;
  ctx->base.num_comp_vectors = 1;
  pthread_mutex_init(&ctx->base.mutex, nullptr);
  ctx->base.ops.poll_cq = softrdma::poll_cq;
  ctx->base.ops.req_notify_cq = softrdma::req_notify_cq;
  ctx->base.ops.post_send = softrdma::post_send;
  ctx->base.ops.post_recv = softrdma::post_recv;
  int async[2];
  int err = open_socket(*ctx);
  if (!err && (pipe2(ctx->wake, O_CLOEXEC | O_NONBLOCK) != 0 || pipe2(async, O_CLOEXEC) != 0)) err = errno;
  if (err) {
    free_context(ctx);
    errno = err;
    return nullptr;
  }
  ctx->base.async_fd = async[0];
  ctx->async_write = async[1];
  start_receiver(*ctx);
  return &ctx->base;
}

SOFTRDMA_EXPORT int ibv_close_device(ibv_context* c) {
  Context* ctx = ctx_of(c);
  stop_receiver(*ctx);
  free_context(ctx);
  return 0;
}

SOFTRDMA_EXPORT int ibv_query_device(ibv_context* c, ibv_device_attr* a) {
  const std::optional<Interface> i = interface_of(c);
  std::memset(a, 0, sizeof *a);
  std::snprintf(a->fw_ver, sizeof a->fw_ver, "softrdma 1");
  if (i) a->node_guid = a->sys_image_guid = guid_of(*i);
  a->max_mr_size = ~0ull;
  a->page_size_cap = 4096;
  a->vendor_id = 0x1d0f;
  a->max_qp = kMaxQpsPerContext;
  a->max_qp_wr = 4096;
  a->max_sge = 8;
  a->max_cq = 256;
  a->max_cqe = 65536;
  a->max_mr = 4096;
  a->max_pd = 256;
  a->atomic_cap = IBV_ATOMIC_NONE;  // SEND/RECV only
  a->max_pkeys = 1;
  a->phys_port_cnt = 1;
  return 0;
}

SOFTRDMA_EXPORT int ibv_query_port(ibv_context* c, uint8_t port, struct _compat_ibv_port_attr* compat) {
  if (port != 1) return EINVAL;
  const std::optional<Interface> i = interface_of(c);
  // The compat struct ends before `flags`: write only what it holds.
  ibv_port_attr a{};
  a.state = i && i->running ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
  a.max_mtu = a.active_mtu = ib_mtu_for(i ? i->mtu : 1500);
  a.gid_tbl_len = kGidCount;
  a.max_msg_sz = static_cast<std::uint32_t>(config().max_frame);
  a.pkey_tbl_len = 1;
  a.active_width = 2;                                 // 4X
  a.active_speed = 32;                                // EDR: 100 Gb/s, the class of a Thunderbolt 5 link
  a.phys_state = a.state == IBV_PORT_ACTIVE ? 5 : 3;  // LinkUp, Disabled
  a.link_layer = IBV_LINK_LAYER_ETHERNET;
  std::memcpy(compat, &a, offsetof(ibv_port_attr, link_layer) + 1);
  return 0;
}

SOFTRDMA_EXPORT int ibv_query_gid(ibv_context* c, uint8_t port, int index, ibv_gid* gid) {
  const std::optional<Interface> i = interface_of(c);
  if (port != 1 || index < 0 || index >= kGidCount || !i) return -1;
  *gid = index == kIpv4GidIndex ? ipv4_mapped_gid(i->addr) : link_local_gid(*i);
  return 0;
}

// rdma-core's private driver.h: enum ibv_gid_type_sysfs { IB_ROCE_V1, ROCE_V2 }; ibv_devinfo calls it.
SOFTRDMA_EXPORT int ibv_query_gid_type(ibv_context* c, uint8_t port, unsigned int index, int* type) {
  constexpr int kSysfsRoceV2 = 1;
  if (port != 1 || index >= kGidCount || !interface_of(c)) return -1;
  *type = kSysfsRoceV2;
  return 0;
}

SOFTRDMA_EXPORT int _ibv_query_gid_ex(ibv_context* c, uint32_t port, uint32_t index, ibv_gid_entry* entry,
                                      uint32_t flags, size_t entry_size) {
  if (flags != 0 || entry_size < sizeof *entry) return EINVAL;
  const std::optional<Interface> i = interface_of(c);
  if (port != 1 || index >= kGidCount || !i) return ENODATA;
  ibv_gid gid{};
  ibv_query_gid(c, 1, static_cast<int>(index), &gid);
  entry->gid = gid;
  entry->gid_index = index;
  entry->port_num = 1;
  entry->gid_type = IBV_GID_TYPE_ROCE_V2;
  entry->ndev_ifindex = i->index;
  return 0;
}

SOFTRDMA_EXPORT ssize_t _ibv_query_gid_table(ibv_context* c, ibv_gid_entry* entries, size_t max, uint32_t flags,
                                             size_t entry_size) {
  if (flags != 0 || entry_size < sizeof *entries) return -EINVAL;
  if (max < kGidCount) return -EINVAL;
  for (int i = 0; i < kGidCount; ++i)
    if (int err = _ibv_query_gid_ex(c, 1, i, &entries[i], 0, entry_size)) return -err;
  return kGidCount;
}

SOFTRDMA_EXPORT int ibv_query_pkey(ibv_context*, uint8_t port, int index, __be16* pkey) {
  if (port != 1 || index != 0) return -1;
  *pkey = htobe16(0xffff);
  return 0;
}

SOFTRDMA_EXPORT int ibv_get_async_event(ibv_context* c, ibv_async_event* event) {
  return read(c->async_fd, event, sizeof *event) == sizeof *event ? 0 : -1;
}

SOFTRDMA_EXPORT void ibv_ack_async_event(ibv_async_event*) {}

}  // extern "C"
