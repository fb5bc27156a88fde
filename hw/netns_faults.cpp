#include "hw/netns_faults.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <utility>

#include "engine/faults/tcp_instability.hpp"
#include "hw/netns_mesh.hpp"

namespace hw {

using engine::FaultKind;

namespace {

// The CPUs of this machine each rank has: what a node-slow's factor scales.
double cpu_share(const engine::Scenario& s) {
  return std::max(1u, std::thread::hardware_concurrency()) / static_cast<double>(s.nodes.size());
}

}  // namespace

std::optional<Refusal> netns_refusal(const engine::Scenario& s) {
  if (s.fabric.type != engine::FabricType::kFullMesh)
    return Refusal{"/cluster/fabric/type",
                   "launch --netns shapes every cable alike from one link card: the fabric must be a full-mesh"};
  for (std::size_t i = 0; i < s.faults.size(); ++i) {
    const engine::FaultSpec& f = s.faults[i];
    std::string why;
    if (f.kind == FaultKind::kNodeSlow) {
      const double share = cpu_share(s);
      if (f.factor * share < CpuQuota::kLeastCpus)
        return Refusal{fmt::format("/faults/{}/factor", i),
                       fmt::format("node-slow: x{} of a rank's {:.3g} CPU here is {:.3g} CPU, below the least quota "
                                   "the kernel sets ({} CPU, 1 ms per 100 ms)",
                                   f.factor, share, f.factor * share, CpuQuota::kLeastCpus)};
      if (const std::string no = CpuQuota::unavailable_reason(); !no.empty())
        why = "slowing a rank needs a cgroup CPU quota: " + no;
    }
    if (!why.empty()) return Refusal{fmt::format("/faults/{}/kind", i), engine::to_string(f.kind) + ": " + why};
  }
  return std::nullopt;
}

void append_event(const std::string& path, double unix_s, const engine::RunEvent& e) {
  const nlohmann::json line = {{"t_unix", unix_s}, {"kind", e.kind}, {"target", e.target}, {"detail", e.detail}};
  std::ofstream(path, std::ios::app) << line.dump() << "\n";
}

std::optional<double> run_clock_zero(const std::string& line) {
  static const std::string kZero = "run clock zero at unix ";
  const auto at = line.find(kZero);
  if (at == std::string::npos) return std::nullopt;
  return std::stod(line.substr(at + kZero.size()));
}

double unix_now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::vector<engine::RunEvent> read_events(const std::string& path, double zero_unix) {
  std::vector<engine::RunEvent> events;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    events.push_back({std::max(0.0, j.at("t_unix").get<double>() - zero_unix), j.at("kind").get<std::string>(),
                      j.at("target").get<std::string>(), j.at("detail").get<std::string>()});
  }
  return events;
}

NetnsFaults::NetnsFaults(const engine::Scenario& s, CableSwitch& cables, double rate_bps, std::vector<double> boot_s)
    : cables_(cables),
      rate_bps_(rate_bps),
      deadline_s_(s.deadline_s),
      cpu_share_(cpu_share(s)),
      boot_s_(std::move(boot_s)),
      stopped_(s.nodes.size(), false),
      restarted_(s.nodes.size(), false),
      powered_off_(s.nodes.size(), false) {
  for (const engine::FaultSpec& f : s.faults) add(s, f);
  std::stable_sort(steps_.begin(), steps_.end(), [](const Step& x, const Step& y) { return x.at_s < y.at_s; });
}

// The steps of one fault, noted as sim/fault_injector.cpp notes them.
void NetnsFaults::add(const engine::Scenario& s, const engine::FaultSpec& f) {
  const std::string kind = engine::to_string(f.kind);
  const auto step = [&](double at, Op op, const std::string& k, const std::string& detail, double factor = 1,
                        Change change = Change::kHold) {
    steps_.push_back({at, op, f.node, f.peer, change, factor, {0, k, k.empty() ? "" : f.target, detail}});
  };
  const auto restart = [&](int node, const std::string& cause) {  // as sim/fault_injector.cpp's restart
    const std::string& name = s.nodes.at(node).name;
    const auto on_node = [&](double at, Op op, const std::string& k, const std::string& detail) {
      steps_.push_back({at, op, node, -1, Change::kHold, 1, {0, k, name, detail}});
    };
    on_node(f.at_s, Op::kKill, to_string(FaultKind::kNodeCrash), cause);
    on_node(f.at_s + boot_s_.at(node), Op::kRestart, "node-up",
            "booted; its rank started again, which the instance does not re-admit");
  };
  const auto cable = [&](double at, Change change, const std::string& k, const std::string& detail) {
    step(at, Op::kCable, k, detail, 1, change);
  };
  const double until = f.at_s + f.duration_s;
  switch (f.kind) {
    case FaultKind::kLinkDown:
      cable(f.at_s, Change::kHold, kind, "cable unplugged");
      if (f.duration_s > 0) cable(until, Change::kRelease, to_string(FaultKind::kLinkUp), "cable back");
      break;
    case FaultKind::kLinkUp:
      cable(f.at_s, Change::kReplug, kind, "cable back");
      break;
    case FaultKind::kLinkDegrade:
      step(f.at_s, Op::kShape, kind,
           fmt::format("bandwidth x{} (tbf on both veths), latency +{} s (each end's rank holds what it sends)",
                       f.factor, f.added_latency_s),
           f.factor);
      if (f.duration_s > 0) step(until, Op::kShape, "link-restored", "full bandwidth and latency", 1);
      break;
    case FaultKind::kLinkFlap: {
      const double end = f.duration_s > 0 ? until : deadline_s_;
      cable(f.at_s, Change::kHold, kind, fmt::format("down {:.0f}% of every {} s", 100 * f.duty, f.period_s));
      for (double t = f.at_s;; t += f.period_s) {
        if (t > f.at_s) cable(t, Change::kHold, "", "");
        cable(t + f.duty * f.period_s, Change::kRelease, "", "");
        if (t + 2 * f.period_s > end) break;
      }
      break;
    }
    case FaultKind::kNodeCrash:
      step(f.at_s, Op::kKill, kind, "power lost");
      break;
    case FaultKind::kNodeSlow:
      step(f.at_s, Op::kThrottle, kind,
           fmt::format("compute at x{} speed (thermal throttling; a cgroup CPU quota of {:.3g} CPU, x{} of the "
                       "rank's share of this machine's {} cores)",
                       f.factor, f.factor * cpu_share_, f.factor, std::thread::hardware_concurrency()),
           f.factor);
      if (f.duration_s > 0) step(until, Op::kThrottle, "node-speed-restored", "full speed", 1);
      break;
    case FaultKind::kNodeRestart:
      restart(f.node, "restarted");
      break;
    case FaultKind::kTcpInstability:
      for (const int node : engine::tcp_instability_reboots(s, f)) restart(node, engine::kTcpPanic);
      break;
    case FaultKind::kRdmaStackFailure:
      step(f.at_s, Op::kRdmaStackFailure, kind, "every RDMA cable unusable until the whole cluster restarts");
      break;
    case FaultKind::kNodeHang:
      step(f.at_s, Op::kStop, kind, "alive but silent");
      if (f.duration_s > 0) step(until, Op::kContinue, "node-resumed", "answers again");
      break;
    default:
      break;  // rdma-packet-loss is PacketLossSwitch's; what else is left, netns_refusal refused
  }
}

void NetnsFaults::apply_due(double t_s, const std::vector<pid_t>& pids,
                            const std::function<void(const engine::RunEvent&)>& note) {
  for (; next_ < steps_.size() && steps_[next_].at_s <= t_s; ++next_) {
    const Step& s = steps_[next_];
    if (!s.event.kind.empty()) {
      engine::RunEvent e = s.event;
      e.t_s = t_s;
      note(e);
    }
    const pid_t pid = s.a >= 0 ? pids.at(s.a) : -1;  // none: a fault of the whole cluster
    switch (s.op) {
      case Op::kCable:
        change_cable(s.a, s.b, s.change);
        break;
      case Op::kShape:
        cables_.shape_link(s.a, s.b, cable_tbf(rate_bps_ * s.factor));
        break;
      case Op::kKill:
        // A machine that loses power closes no connection, but the kernel closes a killed
        // process's: its cables go dark first, so its peers learn of it from its silence,
        // as in simulation, and not at once from a FIN.
        set_power(s.a, false);
        if (pid > 0) ::kill(pid, SIGKILL);
        stopped_[s.a] = false;
        break;
      case Op::kStop:
      case Op::kContinue:
        if (pid > 0) ::kill(pid, s.op == Op::kStop ? SIGSTOP : SIGCONT);
        stopped_[s.a] = s.op == Op::kStop;
        break;
      case Op::kThrottle: {
        if (pid <= 0) break;
        auto& quota = quotas_[s.a];
        if (!quota) quota = std::make_unique<CpuQuota>(fmt::format("meshinfer-{}-rank{}", ::getpid(), s.a));
        quota->limit(pid, s.factor < 1 ? s.factor * cpu_share_ : 0);
        break;
      }
      case Op::kRestart:
        set_power(s.a, true);
        restarts_.push_back(s.a);
        restarted_[s.a] = true;
        break;
      case Op::kRdmaStackFailure:
        // Every cable of the mesh is point-to-point, as the simulator's RDMA cables; the secondary network stays.
        holds_.fail_rdma_stack();
        for (int a = 0; a < static_cast<int>(powered_off_.size()); ++a)
          for (int b = a + 1; b < static_cast<int>(powered_off_.size()); ++b) cables_.set_link_up(a, b, false);
        break;
    }
  }
}

// A replug does not bring a cable up while one of its ends has no power, nor
// any cable after the RDMA stack failed.
void NetnsFaults::change_cable(int a, int b, Change c) {
  const bool up = holds_.change(fmt::format("{}-{}", std::min(a, b), std::max(a, b)), c, true);
  cables_.set_link_up(a, b, up && !powered_off_[a] && !powered_off_[b]);
}

void NetnsFaults::set_power(int rank, bool on) {
  powered_off_[rank] = !on;
  cables_.set_secondary_port_up(rank, on);
  for (int peer = 0; peer < static_cast<int>(powered_off_.size()); ++peer)
    if (peer != rank) change_cable(rank, peer, on ? Change::kRelease : Change::kHold);
}

std::vector<int> NetnsFaults::take_restarts() { return std::exchange(restarts_, {}); }

void NetnsFaults::end_left_out(const std::vector<pid_t>& pids) {
  for (std::size_t r = 0; r < pids.size(); ++r)
    if (pids[r] > 0 && !stopped_[r] && !restarted_[r]) return;  // a rank of the run still runs
  const bool steps_left = next_ < steps_.size();                // a SIGCONT may still be due
  for (std::size_t r = 0; r < pids.size(); ++r)
    if (pids[r] > 0 && (restarted_[r] || !steps_left)) ::kill(pids[r], SIGKILL);
}

}  // namespace hw
