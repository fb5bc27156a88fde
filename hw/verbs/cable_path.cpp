#include "hw/verbs/cable_path.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <span>
#include <stdexcept>

#include "hw/verbs/verbs_endpoint.hpp"

namespace hw {

namespace {

enum Tag { kMtu = 1, kEndpoint, kReady, kView };
constexpr std::size_t kRemoteKeyBytes = 12;  // after the endpoint: the buffer's address (8) and rkey (4)

std::vector<std::byte> encode(const std::optional<Delivery>& d) {
  std::vector<std::byte> out;
  if (!d) return out;
  out.push_back(static_cast<std::byte>(d->crossed ? 1 : 0));
  for (char c : d->what) out.push_back(static_cast<std::byte>(c));
  return out;
}

std::optional<Delivery> decode(const std::vector<std::byte>& in) {
  if (in.empty()) return std::nullopt;
  Delivery d{in[0] != std::byte{0}, ""};
  for (std::size_t i = 1; i < in.size(); ++i) d.what.push_back(static_cast<char>(in[i]));
  return d;
}

Delivery not_connected(const std::string& why) { return {false, "the cable pair does not connect: " + why}; }

}  // namespace

CablePath::CablePath(VerbsApi& api, const std::string& device, const PortChoice& port, engine::Runtime& side,
                     double wait_s)
    : local_(api, device), port_(port), side_(side), wait_s_(wait_s), mtu_(port.active_mtu) {
  const std::vector<std::byte> theirs = trade(kMtu, {static_cast<std::byte>(port.active_mtu)});
  if (!theirs.empty()) mtu_ = std::min(mtu_, static_cast<ibv_mtu>(theirs[0]));
}

std::vector<std::byte> CablePath::trade(int tag, std::vector<std::byte> mine) {
  if (!lost_.empty()) return {};
  const int other = 1 - side_.rank();
  try {
    side_.send(other, tag, engine::Payload::of(mine));
    const engine::Payload theirs = side_.recv(other, tag, 2 * wait_s_ + 30);
    return {theirs.bytes.begin(), theirs.bytes.end()};
  } catch (const std::exception& e) {
    lost_ = std::string("the other end went silent: ") + e.what();
    return {};
  }
}

// Both ends walk the same steps, each trade a meeting point: endpoints, then
// "receive posted", then what each saw. A failure an end meets is its own
// verdict (the sender's first); otherwise the receiver's view of the frame.
Delivery CablePath::send(std::size_t bytes, ibv_mtu a_mtu, ibv_mtu b_mtu, ibv_wr_opcode op) {
  const bool sender = side_.rank() == 0;
  rule_kit::Qp q(local_, IBV_QPT_UC);
  std::optional<Delivery> mine;
  if (!local_.mr)
    mine = not_connected("this end's memory cannot be registered");
  else if (!q.qp)
    mine = not_connected("no UC queue pair: " + rule_kit::errno_text(q.error));
  else if (const int e = rule_kit::to_init(q, port_))
    mine = not_connected("INIT refused: " + rule_kit::errno_text(e));

  std::vector<std::byte> wire;
  if (!mine) {
    wire = serialize(VerbsEndpoint{port_.lid, q.qp->qp_num, 0, port_.gid, static_cast<std::uint8_t>(port_.active_mtu)});
    const std::uint64_t addr = reinterpret_cast<std::uintptr_t>(local_.buf.data());
    const std::uint32_t rkey = local_.mr->rkey;
    wire.resize(kEndpointWireBytes + kRemoteKeyBytes);
    std::memcpy(wire.data() + kEndpointWireBytes, &addr, 8);
    std::memcpy(wire.data() + kEndpointWireBytes + 8, &rkey, 4);
  }
  const std::vector<std::byte> theirs = trade(kEndpoint, wire);
  if (!lost_.empty()) return {false, lost_};
  if (!mine && theirs.size() != kEndpointWireBytes + kRemoteKeyBytes)
    mine = not_connected("the other end has no queue pair in INIT");
  std::uint64_t remote_addr = 0;
  std::uint32_t rkey = 0;
  if (!mine) {
    try {
      const VerbsEndpoint e = parse_endpoint(std::span(theirs).first(kEndpointWireBytes));
      std::memcpy(&remote_addr, theirs.data() + kEndpointWireBytes, 8);
      std::memcpy(&rkey, theirs.data() + kEndpointWireBytes + 8, 4);
      if (rule_kit::to_rtr(q, e.qpn, e.gid, port_, sender ? a_mtu : b_mtu) || rule_kit::to_rts(q))
        mine = not_connected(rule_kit::errno_text(errno));
    } catch (const std::runtime_error& e) {
      mine = not_connected(std::string("the other end's endpoint: ") + e.what());
    }
  }

  if (sender) {
    const std::vector<std::byte> ready = trade(kReady, {});
    if (!mine && !ready.empty() && ready[0] == std::byte{1}) {
      for (std::size_t i = 0; i < bytes; ++i) local_.buf[i] = rule_kit::pattern(i);
      if (const int e = rule_kit::post_frame(q, bytes, op, remote_addr, rkey)) {
        mine = Delivery{false, "refused by ibv_post_send: " + rule_kit::errno_text(e)};
      } else if (const auto sent = rule_kit::completion(q, wait_s_); sent && sent->status != IBV_WC_SUCCESS) {
        mine = Delivery{false, std::string("send completion ") + ibv_wc_status_str(sent->status)};
      }
    }
    const std::optional<Delivery> view = decode(trade(kView, encode(mine)));
    if (!lost_.empty()) return {false, lost_};
    return mine ? *mine : view.value_or(Delivery{false, "the receiving end said nothing"});
  }
  bool posted = false;
  if (!mine) {
    std::fill_n(local_.buf.begin(), bytes, std::byte{0});
    if (rule_kit::post_recv(q, bytes) != 0)
      mine = Delivery{false, "ibv_post_recv in RTS failed: " + rule_kit::errno_text(errno)};
    else
      posted = true;
  }
  trade(kReady, {static_cast<std::byte>(posted ? 1 : 0)});
  const Delivery view = mine ? *mine : rule_kit::landed(q, bytes, op, wait_s_);
  const std::optional<Delivery> senders = decode(trade(kView, encode(view)));
  if (!lost_.empty()) return {false, lost_};
  return senders ? *senders : view;
}

}  // namespace hw
