#include "sim/flow_timing.hpp"

#include <algorithm>
#include <map>
#include <queue>
#include <simgrid/s4u.hpp>
#include <span>

namespace sg4 = simgrid::s4u;

namespace sim {

// A discrete-event run of one collective: events are a message leaving, a
// hop's latency ending, a relay handing a message on, a member's phase ending;
// between events every message in its bandwidth phase drains at its max-min rate.
class FlowTimer::Run {
 public:
  void time(const std::vector<int>& members, const std::vector<FlowPart>& parts, FlowTiming& out) {
    parts_ = &parts;
    out_ = &out;
    world_ = static_cast<int>(parts.size());
    out.done_s.assign(world_, kNever);
    out.blocked_on.assign(world_, -1);
    phase_.assign(world_, 0);
    pending_.assign(world_, 0);
    sent_until_.assign(world_, 0);
    for (auto& table : arrivals_) table.assign(static_cast<std::size_t>(world_) * world_, -1);
    flows_.clear();
    draining_.clear();
    link_ids_.clear();
    for (Link& l : links_) l.draining = 0;  // a message on a link of no bandwidth never drained
    relay_busy_.clear();
    now_ = 0;
    for (int r : members) start_phase(r, 0, parts[r].arrived_s);
    loop();
    for (int r : members) {
      if (out.done_s[r] != kNever) continue;
      for (int src : parts[r].receives.at(phase_[r]))
        if (arrival(phase_[r], r, src) < 0) {
          out.blocked_on[r] = src;
          break;
        }
    }
    out.arrival_s.swap(arrivals_);  // handed over, not copied: the next run resets what it gets back
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
    int first_link = 0, links = 0;  // its hop's links in link_ids_
  };
  struct Link {
    const sg4::Link* link;
    int draining = 0;  // messages draining through it now
    double left = 0;   // share_bandwidth's
    int unfixed = 0;
  };

  void loop() {
    for (;;) {
      // The next message to drain; ties go to the lower flow, whatever the order of draining_.
      int first = -1;
      double finish = kNever;
      for (int f : draining_) {
        const double t = now_ + flows_[f].remaining / flows_[f].rate;
        if (t < finish || (t == finish && f < first)) {
          finish = t;
          first = f;
        }
      }
      const double next_event = events_.empty() ? kNever : events_.top().t;
      if (first < 0 && next_event == kNever) return;
      const double t = std::min(finish, next_event);
      for (int f : draining_) flows_[f].remaining -= flows_[f].rate * (t - now_);
      now_ = t;
      if (first >= 0 && finish <= next_event) {
        hop_done(first);
      } else {
        const Event e = events_.top();
        events_.pop();
        handle(e);
      }
    }
  }

  void at(double t, Kind kind, int a, int b = 0, int c = 0) { events_.push({t, seq_++, kind, a, b, c}); }

  double& arrival(int phase, int dst, int src) {
    if (phase >= static_cast<int>(arrivals_.size()))
      arrivals_.resize(phase + 1, std::vector<double>(static_cast<std::size_t>(world_) * world_, -1));
    return arrivals_[phase][dst * world_ + src];
  }

  void start_phase(int r, int k, double t) {
    const FlowPart& part = (*parts_)[r];
    if (k >= static_cast<int>(std::max(part.sends.size(), part.receives.size()))) {
      out_->done_s[r] = t;
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
        flows_.push_back({e.a, e.b, &(*parts_)[e.a].sends[e.b][e.c]});
        return start_hop(static_cast<int>(flows_.size()) - 1);
      case Kind::kLatencyOver:
        return drain(e.a);
      case Kind::kRelayOut:
        ++flows_[e.a].hop;
        return start_hop(e.a);
      case Kind::kPhaseOver:
        return start_phase(e.a, phase_[e.a] + 1, now_);
    }
  }

  int index_of(const sg4::Link* l) {
    auto [it, added] = index_.try_emplace(l, static_cast<int>(links_.size()));
    if (added) links_.push_back({l});
    return it->second;
  }

  // A hop whose route is down loses its message: nobody receives it.
  void start_hop(int f) {
    Flow& flow = flows_[f];
    const FlowHop& hop = flow.m->hops[flow.hop];
    if (!hop.links) return;
    double latency = 0;
    flow.first_link = static_cast<int>(link_ids_.size());
    flow.links = 0;
    for (const sg4::Link* l : *hop.links) {
      if (!l->is_on()) return;
      latency += l->get_latency();
      link_ids_.push_back(index_of(l));
      ++flow.links;
    }
    flow.remaining = hop.timed_bytes;
    at(now_ + latency, Kind::kLatencyOver, f);
  }

  std::span<const int> links_of(int f) const {
    return {link_ids_.data() + flows_[f].first_link, static_cast<std::size_t>(flows_[f].links)};
  }

  // Its latency paid, a message shares its links' bandwidth from now on.
  // Alone on them, it takes the narrowest; else every share is computed again.
  void drain(int f) {
    draining_.push_back(f);
    bool alone = true;
    for (int l : links_of(f))
      if (++links_[l].draining > 1) alone = false;
    if (!alone) return share_bandwidth();
    flows_[f].rate = kNever;
    for (int l : links_of(f)) flows_[f].rate = std::min(flows_[f].rate, links_[l].link->get_bandwidth());
  }

  void hop_done(int f) {
    Flow& flow = flows_[f];
    flow.remaining = 0;
    draining_.erase(std::find(draining_.begin(), draining_.end(), f));
    bool alone = true;
    for (int l : links_of(f))
      if (links_[l].draining-- > 1) alone = false;
    if (!alone) share_bandwidth();
    if (flow.hop + 1 < flow.m->hop_count) {
      // One relay actor per detour forwards its messages one at a time.
      double& busy = relay_busy_[{flow.src, flow.m->dst}];
      busy = std::max(busy, now_) + flow.m->relay_overhead_s;
      at(busy, Kind::kRelayOut, f);
      return;
    }
    const int dst = flow.m->dst;
    arrival(flow.phase, dst, flow.src) = now_;
    if (phase_[dst] == flow.phase && pending_[dst] > 0 && --pending_[dst] == 0 && out_->done_s[dst] == kNever)
      at(std::max(now_, sent_until_[dst]), Kind::kPhaseOver, dst);
  }

  // Max-min fair shares by progressive filling: the most contended link fixes
  // the rate of its messages, and so on.
  void share_bandwidth() {
    for (int f : draining_)
      for (int l : links_of(f)) {
        links_[l].left = links_[l].link->get_bandwidth();
        links_[l].unfixed = links_[l].draining;
      }
    fixed_.assign(flows_.size(), 0);
    for (std::size_t done = 0; done < draining_.size();) {
      int tightest = -1;
      for (int f : draining_)
        for (int l : links_of(f))
          if (links_[l].unfixed > 0 &&
              (tightest < 0 || links_[l].left / links_[l].unfixed < links_[tightest].left / links_[tightest].unfixed))
            tightest = l;
      const double share = links_[tightest].left / links_[tightest].unfixed;
      for (int f : draining_) {
        const auto links = links_of(f);
        if (fixed_[f] || std::find(links.begin(), links.end(), tightest) == links.end()) continue;
        fixed_[f] = 1;
        ++done;
        flows_[f].rate = share;
        for (int l : links) {
          links_[l].left -= share;
          --links_[l].unfixed;
        }
      }
    }
  }

  const std::vector<FlowPart>* parts_ = nullptr;
  FlowTiming* out_ = nullptr;
  int world_ = 0;
  double now_ = 0;
  long seq_ = 0;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::vector<Flow> flows_;
  std::vector<int> draining_, link_ids_;
  std::vector<char> fixed_;
  std::vector<Link> links_;
  std::map<const sg4::Link*, int> index_;
  std::vector<int> phase_, pending_;
  std::vector<double> sent_until_;
  std::vector<std::vector<double>> arrivals_;  // by phase: [destination][source], -1 until received
  std::map<std::pair<int, int>, double> relay_busy_;
};

FlowTimer::FlowTimer() : run_(std::make_unique<Run>()) {}

FlowTimer::~FlowTimer() = default;

void FlowTimer::time(const std::vector<int>& members, const std::vector<FlowPart>& parts, FlowTiming& out) {
  run_->time(members, parts, out);
}

}  // namespace sim
