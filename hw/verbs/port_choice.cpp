#include "hw/verbs/port_choice.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "hw/verbs/verbs_endpoint.hpp"

namespace hw {

namespace {

const char* port_state_name(ibv_port_state s) {
  switch (s) {
    case IBV_PORT_DOWN:
      return "DOWN";
    case IBV_PORT_INIT:
      return "INIT";
    case IBV_PORT_ARMED:
      return "ARMED";
    case IBV_PORT_ACTIVE:
      return "ACTIVE";
    default:
      return "NOP";
  }
}

// The IPv4-mapped GID of `c.port`, published once the interface has an IPv4
// address: a RoCE v2 one where the library tells GID types apart (rxe lists a
// RoCE v1 twin first), else the first. Its index goes into ibv_global_route's
// 8-bit sgid_index, so a larger one is refused rather than cut.
void find_ipv4_gid(VerbsApi& api, ibv_context* context, const ibv_port_attr& attr, PortChoice& c) {
  for (std::uint32_t i = 0; i < static_cast<std::uint32_t>(std::max(attr.gid_tbl_len, 0)); ++i) {
    ibv_gid gid{};
    bool roce_v2 = false;
    const int err = api.query_gid_ex(context, c.port, i, &gid, &roce_v2);
    const bool typed = err == 0;
    if (err == EOPNOTSUPP ? api.query_gid(context, c.port, static_cast<int>(i), &gid) != 0 : !typed) continue;
    std::array<std::uint8_t, 16> raw;
    std::copy(std::begin(gid.raw), std::end(gid.raw), raw.begin());
    if (!is_ipv4_mapped(raw) || (c.gid_index >= 0 && !(typed && roce_v2))) continue;
    if (i > 255 && c.gid_index >= 0) return;  // keep the RoCE v1 one found below 256
    if (i > 255)
      throw std::runtime_error(fmt::format("port {}: GID {} is at index {}, beyond the 8 bits of sgid_index", c.port,
                                           gid_to_string(raw), i));
    c.gid_index = static_cast<int>(i);
    c.gid = raw;
    if (!typed || roce_v2) return;  // else a RoCE v2 twin may follow
  }
  if (c.gid_index < 0)
    throw std::runtime_error(
        fmt::format("port {} has no IPv4-mapped GID yet: give its interface an IPv4 address", c.port));
}

}  // namespace

PortChoice choose_port(VerbsApi& api, ibv_context* context) {
  ibv_device_attr device_attr{};
  if (api.query_device(context, &device_attr) != 0) throw std::runtime_error("ibv_query_device failed");
  std::string states;
  for (int p = 1; p <= device_attr.phys_port_cnt; ++p) {
    ibv_port_attr attr{};
    if (api.query_port(context, static_cast<std::uint8_t>(p), &attr) != 0)
      throw std::runtime_error(fmt::format("ibv_query_port {} failed", p));
    if (attr.state == IBV_PORT_ACTIVE) {
      PortChoice c;
      c.port = static_cast<std::uint8_t>(p);
      c.active_mtu = attr.active_mtu;
      c.lid = attr.lid;
      c.max_msg_sz = attr.max_msg_sz;
      find_ipv4_gid(api, context, attr, c);
      return c;
    }
    states += fmt::format("{}port {} {}", states.empty() ? "" : ", ", p, port_state_name(attr.state));
  }
  throw std::runtime_error(fmt::format("device is down: no ACTIVE port ({})", states.empty() ? "no ports" : states));
}

}  // namespace hw
