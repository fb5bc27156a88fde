#include "hw/verbs/rdma_rules.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "hw/verbs/port_choice.hpp"
#include "hw/verbs/rule_kit.hpp"
#include "hw/verbs/verbs_endpoint.hpp"

namespace hw {

namespace {

using rule_kit::errno_text;
using rule_kit::Qp;
using rule_kit::Side;

constexpr std::size_t kFrameSizes[] = {4096, 8192, 65536, 524288, 1048576};
constexpr std::size_t kMacos263Frame = 524288;

// Each rule and what Apple's rules say of it (docs/reference-facts.md#macos-rdma-over-thunderbolt),
// in the order they are reported.
enum Rule { kIpv4Gid, kUcOnly, kLocalWriteMr, kRecvBeforeRts, kSendRecvOnly, kMtu, kFrameLimit, kRuleCount };
constexpr std::pair<const char*, const char*> kRules[kRuleCount] = {
    {"ipv4-gid",
     "the port publishes the IPv4-mapped GID (::ffff:a.b.c.d) of its interface's address, and none while the "
     "interface has no IPv4 address"},
    {"uc-only", "UC queue pairs are created; RC is refused with EOPNOTSUPP (errno 102 on macOS)"},
    {"local-write-mr",
     "a memory region with LOCAL_WRITE alone is refused; LOCAL_WRITE|REMOTE_READ (what the transport asks) is "
     "accepted"},
    {"recv-before-rts", "ibv_post_recv is refused in INIT and RTR and accepted in RTS"},
    {"send-recv-only", "two-sided SEND/RECV only: an RDMA WRITE is refused or fails"},
    {"mtu",
     "a 4 KiB SEND crosses when both ends use the port's active MTU, and is dropped (UC) when the ends' path MTUs "
     "differ; the transport exchanges MTUs and uses the smaller"},
    {"frame-limit",
     "a 4 KiB SEND crosses; the largest that crosses is the stack's frame size (4 KiB on macOS 26.2, up to 512 KiB "
     "from 26.3); nothing larger crosses"},
};

// `rule` with its expectation, judged as differing until shown otherwise.
RuleResult result_of(Rule rule) { return {kRules[rule].first, kRules[rule].second, "", Verdict::kDiffers}; }

// The interface's first IPv4 address ("" when it has none), or nullopt when there is no such interface.
std::optional<std::string> interface_ipv4(const std::string& name) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return std::nullopt;
  std::optional<std::string> found;
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (name != i->ifa_name) continue;
    if (!found) found = "";
    if (found->empty() && i->ifa_addr && i->ifa_addr->sa_family == AF_INET) {
      char text[INET_ADDRSTRLEN];
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, text, sizeof text);
      found = text;
    }
  }
  freeifaddrs(list);
  return found;
}

// Two queue pairs on one device, each on its own context as two processes would hold them.
class Loopback : public FramePath {
 public:
  Loopback(VerbsApi& api, const std::string& device, const PortChoice& port, double wait_s)
      : a_(api, device), b_(api, device), port_(port), wait_s_(wait_s) {}
  std::string unusable() const {
    if (!a_.ctx || !b_.ctx) return "the device does not open twice";
    return a_.mr && b_.mr ? "" : "the loopback pair's memory cannot be registered";
  }
  ibv_mtu active_mtu() const override { return port_.active_mtu; }

  Delivery send(std::size_t bytes, ibv_mtu a_mtu, ibv_mtu b_mtu, ibv_wr_opcode op) override {
    Qp qa(a_, IBV_QPT_UC), qb(b_, IBV_QPT_UC);
    if (!qa.qp || !qb.qp) return {false, "no UC queue pair: " + errno_text(qa.qp ? qb.error : qa.error)};
    if (rule_kit::to_init(qa, port_) || rule_kit::to_init(qb, port_) ||
        rule_kit::to_rtr(qa, qb.qp->qp_num, port_.gid, port_, a_mtu) ||
        rule_kit::to_rtr(qb, qa.qp->qp_num, port_.gid, port_, b_mtu) || rule_kit::to_rts(qa) || rule_kit::to_rts(qb))
      return {false, "the loopback pair does not connect: " + errno_text(errno)};
    std::memset(b_.buf.data(), 0, bytes);
    for (std::size_t i = 0; i < bytes; ++i) a_.buf[i] = rule_kit::pattern(i);
    if (rule_kit::post_recv(qb, bytes) != 0) return {false, "ibv_post_recv in RTS failed: " + errno_text(errno)};
    if (const int e = rule_kit::post_frame(qa, bytes, op, reinterpret_cast<std::uintptr_t>(b_.buf.data()), b_.mr->rkey);
        e != 0)
      return {false, "refused by ibv_post_send: " + errno_text(e)};
    const auto sent = rule_kit::completion(qa, wait_s_);
    if (sent && sent->status != IBV_WC_SUCCESS)
      return {false, fmt::format("send completion {}", ibv_wc_status_str(sent->status))};
    return rule_kit::landed(qb, bytes, op, wait_s_);
  }

  Side& a() { return a_; }
  Side& b() { return b_; }

 private:
  Side a_, b_;
  PortChoice port_;
  double wait_s_;
};

RuleResult ipv4_gid_rule(const std::string& device, const std::optional<PortChoice>& port, const std::string& why) {
  RuleResult r = result_of(kIpv4Gid);
  r.verdict = Verdict::kNotObserved;
  const std::string ifname = device.starts_with("rdma_") ? device.substr(5) : device;
  const std::optional<std::string> addr = interface_ipv4(ifname);
  if (!addr) {
    r.observed = fmt::format("no interface {} here to compare with{}", ifname, port ? "" : "; " + why);
    return r;
  }
  if (!port && why.find("IPv4-mapped") == std::string::npos) {
    r.observed = why;
    return r;
  }
  const std::string gid = port ? gid_to_string(port->gid) : "none";
  r.observed =
      fmt::format("{} has {}; IPv4-mapped GID {}{}", ifname, addr->empty() ? "no IPv4 address" : "IPv4 " + *addr, gid,
                  port ? fmt::format(" at index {}", port->gid_index) : "");
  const bool as_documented = addr->empty() ? !port : port && gid == "::ffff:" + *addr;
  r.verdict = as_documented ? Verdict::kAsDocumented : Verdict::kDiffers;
  return r;
}

RuleResult uc_only_rule(Loopback& pair) {
  RuleResult r = result_of(kUcOnly);
  const Qp uc(pair.a(), IBV_QPT_UC), rc(pair.a(), IBV_QPT_RC);
  r.observed = fmt::format("UC {}; RC {}", uc.qp ? "created" : "refused: " + errno_text(uc.error),
                           rc.qp ? "created" : "refused: " + errno_text(rc.error));
  if (uc.qp && !rc.qp && rc.error == EOPNOTSUPP) r.verdict = Verdict::kAsDocumented;
  return r;
}

RuleResult local_write_rule(VerbsApi& api, Side& side) {
  RuleResult r = result_of(kLocalWriteMr);
  std::vector<std::byte> buf(4096);
  auto try_access = [&](int access) {
    ibv_mr* mr = api.reg_mr(side.pd, buf.data(), buf.size(), access);
    const int e = errno;
    if (mr) api.dereg_mr(mr);
    return mr ? std::string("accepted") : "refused: " + errno_text(e);
  };
  const std::string alone = try_access(IBV_ACCESS_LOCAL_WRITE);
  const std::string with_read = try_access(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
  r.observed = fmt::format("LOCAL_WRITE alone {}; LOCAL_WRITE|REMOTE_READ {}", alone, with_read);
  if (alone != "accepted" && with_read == "accepted") r.verdict = Verdict::kAsDocumented;
  return r;
}

RuleResult recv_before_rts_rule(Loopback& pair, const PortChoice& port) {
  RuleResult r = result_of(kRecvBeforeRts);
  Qp qa(pair.a(), IBV_QPT_UC), qb(pair.b(), IBV_QPT_UC);
  if (!qa.qp || !qb.qp || rule_kit::to_init(qa, port) || rule_kit::to_init(qb, port)) {
    r.observed = "the queue pairs do not reach INIT";
    r.verdict = Verdict::kNotObserved;
    return r;
  }
  auto attempt = [&] {
    return rule_kit::post_recv(qa, 4096) == 0 ? std::string("accepted") : "refused: " + errno_text(errno);
  };
  const std::string init = attempt();
  const std::string rtr =
      rule_kit::to_rtr(qa, qb.qp->qp_num, port.gid, port, port.active_mtu) == 0 ? attempt() : "not reached";
  const std::string rts = rule_kit::to_rts(qa) == 0 ? attempt() : "not reached";
  r.observed = fmt::format("INIT {}; RTR {}; RTS {}", init, rtr, rts);
  if (init.starts_with("refused") && rtr.starts_with("refused") && rts == "accepted")
    r.verdict = Verdict::kAsDocumented;
  return r;
}

RuleResult send_recv_only_rule(FramePath& path) {
  RuleResult r = result_of(kSendRecvOnly);
  const Delivery d = path.send(4096, path.active_mtu(), path.active_mtu(), IBV_WR_RDMA_WRITE);
  r.observed = "RDMA WRITE of 4 KiB: " + d.what;
  if (!d.crossed) r.verdict = Verdict::kAsDocumented;
  return r;
}

RuleResult mtu_rule(FramePath& path) {
  RuleResult r = result_of(kMtu);
  const ibv_mtu mtu = path.active_mtu();
  const Delivery same = path.send(4096, mtu, mtu, IBV_WR_SEND);
  r.observed = fmt::format("active MTU {}; at {} both ends: {}", 128 << mtu, 128 << mtu, same.what);
  if (mtu == IBV_MTU_256) {
    r.verdict = same.crossed ? Verdict::kAsDocumented : Verdict::kDiffers;
    return r;
  }
  const auto lower = static_cast<ibv_mtu>(mtu - 1);
  const Delivery mixed = path.send(4096, lower, mtu, IBV_WR_SEND);
  r.observed += fmt::format("; sender at {}, receiver at {}: {}", 128 << lower, 128 << mtu, mixed.what);
  if (same.crossed && !mixed.crossed) r.verdict = Verdict::kAsDocumented;
  return r;
}

RuleResult frame_limit_rule(FramePath& path, const PortChoice& port) {
  RuleResult r = result_of(kFrameLimit);
  r.observed = fmt::format("port max_msg_sz {}", port.max_msg_sz);
  std::size_t largest = 0;
  bool dropped = false, monotone = true;  // nothing crosses once a smaller frame was dropped
  for (const std::size_t bytes : kFrameSizes) {
    const Delivery d = path.send(bytes, path.active_mtu(), path.active_mtu(), IBV_WR_SEND);
    r.observed += fmt::format("; {} B {}", bytes, d.what);
    monotone &= !(d.crossed && dropped);
    dropped |= !d.crossed;
    if (d.crossed) largest = bytes;
  }
  r.observed += fmt::format("; largest crossing {} B", largest);
  if (largest >= kFrameSizes[0] && largest <= kMacos263Frame && monotone) r.verdict = Verdict::kAsDocumented;
  return r;
}

}  // namespace

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kAsDocumented:
      return "as documented";
    case Verdict::kDiffers:
      return "differs";
    default:
      return "not observed";
  }
}

std::vector<RuleResult> check_rdma_rules(VerbsApi& api, const std::string& device, const RuleOptions& options,
                                         FramePath* across) {
  std::optional<PortChoice> port;
  std::string why;
  if (ibv_context* ctx = api.open_device(device)) {
    try {
      port = choose_port(api, ctx);
    } catch (const std::runtime_error& e) {
      why = e.what();
    }
    api.close_device(ctx);
  } else {
    why = "no such device";
  }
  std::vector<RuleResult> rules{ipv4_gid_rule(device, port, why)};
  Loopback pair(api, device, port.value_or(PortChoice{}), options.wait_s);
  const std::string unusable = port ? pair.unusable() : why;
  if (!unusable.empty()) {
    for (int rule = kUcOnly; rule < kRuleCount; ++rule) {
      rules.push_back(result_of(static_cast<Rule>(rule)));
      rules.back().observed = unusable;
      rules.back().verdict = Verdict::kNotObserved;
    }
    return rules;
  }
  rules.push_back(uc_only_rule(pair));
  rules.push_back(local_write_rule(api, pair.a()));
  rules.push_back(recv_before_rts_rule(pair, *port));
  FramePath& path = across ? *across : pair;
  rules.push_back(send_recv_only_rule(path));
  rules.push_back(mtu_rule(path));
  rules.push_back(frame_limit_rule(path, *port));
  if (const std::string why = path.unobservable(); !why.empty())
    for (auto r = rules.end() - 3; r != rules.end(); ++r) {
      r->observed = why;
      r->verdict = Verdict::kNotObserved;
    }
  return rules;
}

}  // namespace hw
