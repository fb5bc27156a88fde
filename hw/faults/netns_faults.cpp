#include "hw/faults/netns_faults.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <utility>


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
      cpu_share_(cpu_share(s)),
      actions_(engine::timed_actions(s, boot_s)),
      hangs_(s.nodes.size(), 0),
      restarted_(s.nodes.size(), false),
      powered_off_(s.nodes.size(), false) {}

engine::RunEvent NetnsFaults::event_here(const engine::FaultAction& a) const {
  engine::RunEvent e = a.event;
  if (e.kind == to_string(FaultKind::kLinkDegrade))
    e.detail = fmt::format("bandwidth x{} (tbf on both veths), latency +{} s (each end's rank holds what it sends)",
                           a.factor, a.added_latency_s);
  else if (e.kind == to_string(FaultKind::kNodeSlow))
    e.detail = fmt::format(
        "compute at x{} speed (thermal throttling; a cgroup CPU quota of {:.3g} CPU, x{} of the rank's share of this "
        "machine's {} cores)",
        a.factor, a.factor * cpu_share_, a.factor, std::thread::hardware_concurrency());
  else if (a.op == engine::FaultAction::Op::kBoot)
    e.detail = "booted; its rank started again, which the instance does not re-admit";
  else if (a.ip_survives)
    e.detail = "every RDMA queue pair failed (softrdma's failure switch) until every rank restarts; the veths stay up";
  return e;
}

void NetnsFaults::apply_due(double t_s, const std::vector<pid_t>& pids,
                            const std::function<void(const engine::RunEvent&)>& note) {
  using Op = engine::FaultAction::Op;
  for (; next_ < actions_.size() && actions_[next_].at_s <= t_s; ++next_) {
    const engine::FaultAction& a = actions_[next_];
    // A hang that ends while another lasts changes nothing, and is not noted (as in simulation).
    const bool still_hung = a.op == Op::kResume && hangs_[a.node] > 1;
    if (!a.event.kind.empty() && !still_hung) {
      engine::RunEvent e = event_here(a);
      e.t_s = t_s;
      note(e);
    }
    const pid_t pid = a.node >= 0 ? pids.at(a.node) : -1;  // none: a fault of the whole cluster
    switch (a.op) {
      case Op::kNote:
        break;
      case Op::kCable:
        change_cable(a.node, a.peer, a.change);
        break;
      case Op::kDegrade:
        cables_.shape_link(a.node, a.peer, cable_tbf(rate_bps_ * a.factor));
        break;
      case Op::kPowerOff:
        // A machine that loses power closes no connection, but the kernel closes a killed
        // process's: its cables go dark first, so its peers learn of it from its silence,
        // as in simulation, and not at once from a FIN.
        set_power(a.node, false);
        if (pid > 0) ::kill(pid, SIGKILL);
        hangs_[a.node] = 0;
        break;
      case Op::kHang:
        if (hangs_[a.node]++ == 0 && pid > 0) ::kill(pid, SIGSTOP);
        break;
      case Op::kResume:
        if (--hangs_[a.node] == 0 && pid > 0) ::kill(pid, SIGCONT);
        break;
      case Op::kThrottle: {
        if (pid <= 0) break;
        auto& quota = quotas_[a.node];
        if (!quota) quota = std::make_unique<CpuQuota>(fmt::format("meshinfer-{}-rank{}", ::getpid(), a.node));
        quota->limit(pid, a.factor < 1 ? a.factor * cpu_share_ : 0);
        break;
      }
      case Op::kBoot:
        set_power(a.node, true);
        restarts_.push_back(a.node);
        restarted_[a.node] = true;
        break;
      case Op::kRdmaStackFailure:
        if (a.ip_survives) break;  // softrdma's switch fails the devices (StackFailureSwitch); IP goes on
        // Every cable of the mesh is point-to-point, as the simulator's RDMA cables; the secondary network stays.
        holds_.fail_rdma_stack();
        for (int x = 0; x < static_cast<int>(powered_off_.size()); ++x)
          for (int y = x + 1; y < static_cast<int>(powered_off_.size()); ++y) cables_.set_link_up(x, y, false);
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
    if (pids[r] > 0 && hangs_[r] == 0 && !restarted_[r]) return;  // a rank of the run still runs
  const bool actions_left = next_ < actions_.size();              // a SIGCONT may still be due
  for (std::size_t r = 0; r < pids.size(); ++r)
    if (pids[r] > 0 && (restarted_[r] || !actions_left)) ::kill(pids[r], SIGKILL);
}

}  // namespace hw
