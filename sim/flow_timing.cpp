#include "sim/flow_timing.hpp"

#include <algorithm>
#include <map>
#include <queue>
#include <simgrid/s4u.hpp>

namespace sg4 = simgrid::s4u;

namespace sim {

bool FlowMessage::route_up() const {
  for (int i = 0; i < hop_count; ++i) {
    if (!hops[i].links) return false;
    for (const sg4::Link* l : *hops[i].links)
      if (!l->is_on()) return false;
  }
  return true;
}

namespace {

// A discrete-event run of one collective: events are a message leaving, a
// hop's latency ending, a relay handing a message on, a member's phase ending;
// between events every message in its bandwidth phase drains at its max-min rate.
class FluidRun {
 public:
  FluidRun(const std::vector<int>& members, const std::vector<FlowPart>& parts, FlowTiming& out)
      : members_(members), parts_(parts), out_(out), world_(static_cast<int>(parts.size())) {
    out_.done_s.assign(world_, kNever);
    out_.blocked_on.assign(world_, -1);
    phase_.assign(world_, 0);
    pending_.assign(world_, 0);
    sent_until_.assign(world_, 0);
  }

  void run() {
    for (int r : members_) start_phase(r, 0, parts_[r].arrived_s);
    for (;;) {
      int first = -1;
      double finish = kNever;
      for (std::size_t f = 0; f < flows_.size(); ++f) {
        if (!flows_[f].draining) continue;
        const double t = now_ + flows_[f].remaining / flows_[f].rate;
        if (t < finish) {
          finish = t;
          first = static_cast<int>(f);
        }
      }
      const double next_event = events_.empty() ? kNever : events_.top().t;
      if (first < 0 && next_event == kNever) break;
      advance_to(std::min(finish, next_event));
      if (first >= 0 && finish <= next_event) {
        hop_done(first);
      } else {
        const Event e = events_.top();
        events_.pop();
        handle(e);
      }
      if (rates_stale_) share_bandwidth();
    }
    for (int r : members_) {
      if (out_.done_s[r] != kNever) continue;
      const auto& waits = parts_[r].receives.at(phase_[r]);
      for (int src : waits)
        if (arrival(phase_[r], r, src) < 0) {
          out_.blocked_on[r] = src;
          break;
        }
    }
  }

 private:
  enum class Kind { kLeave, kLatencyOver, kRelayOut, kPhaseOver };
  struct Event {
    double t;
    long seq;
    Kind kind;
    int a, b, c;  // kLeave: rank, phase, message; kLatencyOver, kRelayOut: flow; kPhaseOver: rank
    bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };
  struct Flow {
    int src, phase;
    const FlowMessage* m;
    int hop = 0;
    double remaining = 0, rate = 0;
    bool draining = false;
  };

  void at(double t, Kind kind, int a, int b = 0, int c = 0) { events_.push({t, seq_++, kind, a, b, c}); }

  void advance_to(double t) {
    for (Flow& f : flows_)
      if (f.draining) f.remaining -= f.rate * (t - now_);
    now_ = t;
  }

  double& arrival(int phase, int dst, int src) {
    auto& table = arrivals_[phase];
    if (table.empty()) table.assign(static_cast<std::size_t>(world_) * world_, -1);
    return table[dst * world_ + src];
  }

  void start_phase(int r, int k, double t) {
    const FlowPart& part = parts_[r];
    if (k >= static_cast<int>(std::max(part.sends.size(), part.receives.size()))) {
      out_.done_s[r] = t;
      return;
    }
    phase_[r] = k;
    if (k < static_cast<int>(part.sends.size()))
      for (std::size_t i = 0; i < part.sends[k].size(); ++i)
        at(t += part.sends[k][i].overhead_s, Kind::kLeave, r, k, static_cast<int>(i));
    sent_until_[r] = t;
    pending_[r] = 0;
    double last = t;
    if (k < static_cast<int>(part.receives.size()))
      for (int src : part.receives[k]) {
        const double a = arrival(k, r, src);
        if (a < 0)
          ++pending_[r];
        else
          last = std::max(last, a);
      }
    if (pending_[r] == 0) at(last, Kind::kPhaseOver, r);
  }

  void handle(const Event& e) {
    switch (e.kind) {
      case Kind::kLeave:
        flows_.push_back({e.a, e.b, &parts_[e.a].sends[e.b][e.c]});
        return start_hop(static_cast<int>(flows_.size()) - 1);
      case Kind::kLatencyOver:
        flows_[e.a].draining = true;
        rates_stale_ = true;
        return;
      case Kind::kRelayOut:
        ++flows_[e.a].hop;
        return start_hop(e.a);
      case Kind::kPhaseOver:
        return start_phase(e.a, phase_[e.a] + 1, now_);
    }
  }

  // A hop whose route is down loses its message: nobody receives it.
  void start_hop(int f) {
    const FlowHop& hop = flows_[f].m->hops[flows_[f].hop];
    if (!hop.links) return;
    double latency = 0;
    for (const sg4::Link* l : *hop.links) {
      if (!l->is_on()) return;
      latency += l->get_latency();
    }
    flows_[f].remaining = hop.wire_bytes;
    at(now_ + latency, Kind::kLatencyOver, f);
  }

  void hop_done(int f) {
    Flow& flow = flows_[f];
    flow.draining = false;
    flow.remaining = 0;
    rates_stale_ = true;
    if (flow.hop + 1 < flow.m->hop_count) {
      // One relay actor per detour forwards its messages one at a time.
      double& busy = relay_busy_[{flow.src, flow.m->dst}];
      busy = std::max(busy, now_) + flow.m->relay_overhead_s;
      at(busy, Kind::kRelayOut, f);
      return;
    }
    const int dst = flow.m->dst;
    arrival(flow.phase, dst, flow.src) = now_;
    if (phase_[dst] == flow.phase && pending_[dst] > 0 && --pending_[dst] == 0 && out_.done_s[dst] == kNever)
      at(std::max(now_, sent_until_[dst]), Kind::kPhaseOver, dst);
  }

  // Max-min fair shares by progressive filling: the most contended link fixes
  // the rate of its messages, and so on. Usually every message has its links
  // to itself, and that is checked first.
  void share_bandwidth() {
    rates_stale_ = false;
    struct Use {
      const sg4::Link* link;
      double left;
      int unfixed;
    };
    std::vector<Use> uses;
    std::vector<int> draining;
    bool shared = false;
    for (std::size_t f = 0; f < flows_.size(); ++f) {
      if (!flows_[f].draining) continue;
      draining.push_back(static_cast<int>(f));
      for (const sg4::Link* l : *flows_[f].m->hops[flows_[f].hop].links) {
        auto it = std::find_if(uses.begin(), uses.end(), [l](const Use& u) { return u.link == l; });
        if (it == uses.end()) {
          uses.push_back({l, l->get_bandwidth(), 1});
        } else {
          ++it->unfixed;
          shared = true;
        }
      }
    }
    const auto links_of = [&](int f) -> const Route& { return *flows_[f].m->hops[flows_[f].hop].links; };
    const auto use_of = [&](const sg4::Link* l) {
      return std::find_if(uses.begin(), uses.end(), [l](const Use& u) { return u.link == l; });
    };
    if (!shared) {
      for (int f : draining) {
        flows_[f].rate = kNever;
        for (const sg4::Link* l : links_of(f)) flows_[f].rate = std::min(flows_[f].rate, use_of(l)->left);
      }
      return;
    }
    std::vector<char> fixed(flows_.size(), 0);
    for (std::size_t done = 0; done < draining.size();) {
      auto tightest = uses.end();
      for (auto u = uses.begin(); u != uses.end(); ++u)
        if (u->unfixed > 0 && (tightest == uses.end() || u->left / u->unfixed < tightest->left / tightest->unfixed))
          tightest = u;
      const double share = tightest->left / tightest->unfixed;
      const sg4::Link* bottleneck = tightest->link;
      for (int f : draining) {
        const Route& links = links_of(f);
        if (fixed[f] || std::find(links.begin(), links.end(), bottleneck) == links.end()) continue;
        fixed[f] = 1;
        ++done;
        flows_[f].rate = share;
        for (const sg4::Link* l : links) {
          auto u = use_of(l);
          u->left -= share;
          --u->unfixed;
        }
      }
    }
  }

  const std::vector<int>& members_;
  const std::vector<FlowPart>& parts_;
  FlowTiming& out_;
  int world_;
  double now_ = 0;
  long seq_ = 0;
  bool rates_stale_ = false;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::vector<Flow> flows_;
  std::vector<int> phase_, pending_;
  std::vector<double> sent_until_;
  std::map<int, std::vector<double>> arrivals_;  // by phase: [destination][source], -1 until received
  std::map<std::pair<int, int>, double> relay_busy_;
};

}  // namespace

void time_flows(const std::vector<int>& members, const std::vector<FlowPart>& parts, FlowTiming& out) {
  FluidRun(members, parts, out).run();
}

}  // namespace sim
