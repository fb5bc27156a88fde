#include "engine/faults/oracle.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "engine/cards/model_math.hpp"
#include "engine/faults/fault_timeline.hpp"

namespace engine {

namespace {

using json = nlohmann::ordered_json;

// Usable memory this much above the weights holds the model under any
// placement the planner tries; between the two, the oracle does not judge.
constexpr double kHoldMargin = 1.2;

bool touches(const Outage& o, int node) {
  return o.kind == Outage::kAnyNodes || o.node == node || (o.kind == Outage::kCable && o.peer == node);
}

bool node_lost(const Outage& o, int node) { return o.kind != Outage::kCable && touches(o, node); }

bool coordinator_lost(const std::vector<Outage>& seen) {
  return std::any_of(seen.begin(), seen.end(), [](const Outage& o) { return node_lost(o, 0); });
}

class Judge {
 public:
  Judge(const Scenario& s, const Catalog& catalog, const json& report)
      : s_(s), catalog_(catalog), report_(report), bounds_{s.heartbeat_s, s.heartbeat_timeout_s} {
    const std::vector<Outage> all = outages(s, catalog);
    for (const Outage& o : all)
      if (o.silence_s > bounds_.may_detect_above()) noticeable_.push_back(o);
    for (const Outage& o : all)
      noticed_.push_back({o.silence_s > bounds_.may_detect_above() ? o.start_s : kForever, o});
  }

  std::vector<std::string> run() {
    check_sequences();
    check_failures();
    check_suspects();
    check_bounds();
    check_tokens();
    return std::move(out_);
  }

 private:
  // Outages detection may act on by `t`: silent past the timeout, or found to have lost a message.
  std::vector<Outage> noticeable_by(double t) const {
    std::vector<Outage> v;
    for (const auto& [from, o] : noticed_)
      if (from <= t) v.push_back(o);
    return v;
  }

  // The real transports number each peer's messages and fail a peer whose
  // numbers skip one: a message is never taken in place of a lost one. A lost
  // message is what a cable outage does (to either end's cables: a detour's
  // hop is lost too) or what the nodes an unknown outage takes may do; from
  // the moment a receiver found one, detection may act on that outage.
  void check_sequences() {
    if (!report_.contains("sequences")) return;
    for (const auto& q : report_["sequences"]) {
      const std::string from = q["from"].get<std::string>(), to = q["to"].get<std::string>();
      const auto taken = q["taken"].get<std::uint64_t>(), numbered = q["numbered"].get<std::uint64_t>();
      if (taken < numbered)
        out_.push_back(
            fmt::format("stand-in: {} took {} messages from {} numbered up to {}: {} taken in place of "
                        "one lost before it, where the real transports fail the sender",
                        to, taken, from, numbered, numbered - taken));
      if (q["gap_s"].is_null()) continue;
      const double t = q["gap_s"].get<double>();
      const int a = s_.node_index(from), b = s_.node_index(to);
      bool explained = false;
      for (auto& [noticed_from, o] : noticed_)
        if (o.start_s <= t &&
            (o.kind == Outage::kAnyNodes || (o.kind == Outage::kCable && (touches(o, a) || touches(o, b))))) {
          noticed_from = std::min(noticed_from, t);
          explained = true;
        }
      if (!explained)
        out_.push_back(
            fmt::format("lost message: {} found a message from {} lost at {:.3f} s, though no cable of "
                        "either had been down",
                        to, from, t));
    }
  }

  static std::string causes(const std::vector<Outage>& outages) {
    std::string out;
    for (const Outage& o : outages) out += (out.empty() ? "" : "; ") + o.cause;
    return out;
  }

  double first_event(const std::string& kind) const {
    for (const auto& e : report_["events"])
      if (e["kind"] == kind) return e["t_s"].get<double>();
    return -1;
  }

  // 1: the nodes no outage in `seen` touched can hold the model; 0: they cannot; -1: too close to call.
  int survivors_hold(const std::vector<Outage>& seen) const {
    const ModelCard& model = catalog_.model(s_.model);
    const double weights = weight_bytes(model, model.quant(s_.quant));
    double usable = 0;
    for (int n = 0; n < static_cast<int>(s_.nodes.size()); ++n) {
      // The coordinator stays unless it is itself lost: a cable's other end is what a replan drops.
      const bool gone = std::any_of(seen.begin(), seen.end(),
                                    [&](const Outage& o) { return n == 0 ? node_lost(o, 0) : touches(o, n); });
      const HardwareCard& hw = catalog_.hardware(s_.nodes[n].hardware);
      if (!gone) usable += hw.memory_bytes * hw.usable_memory_fraction;
    }
    return usable < weights ? 0 : usable >= kHoldMargin * weights ? 1 : -1;
  }

  bool cabled(int a, int b, const std::vector<Outage>& seen) const {
    const bool wired = std::any_of(s_.fabric.cables.begin(), s_.fabric.cables.end(),
                                   [&](const Cable& c) { return (c.a == a && c.b == b) || (c.a == b && c.b == a); });
    return wired && std::none_of(seen.begin(), seen.end(), [&](const Outage& o) {
             return o.kind == Outage::kCable && ((o.node == a && o.peer == b) || (o.node == b && o.peer == a));
           });
  }

  // A third node, lost to no outage, still cabled to both ends of `cut`.
  bool bridgeable(const Outage& cut, const std::vector<Outage>& seen) const {
    for (int c = 0; c < static_cast<int>(s_.nodes.size()); ++c) {
      if (c == cut.node || c == cut.peer) continue;
      const bool alive = std::none_of(seen.begin(), seen.end(), [&](const Outage& o) { return node_lost(o, c); });
      if (alive && cabled(c, cut.node, seen) && cabled(c, cut.peer, seen)) return true;
    }
    return false;
  }

  // Why the schedule allows a request to fail with `error` at `t`; empty when nothing does.
  std::string justification(const std::string& error, double t) const {
    const auto seen = noticeable_by(t);
    if (seen.empty()) return "";
    const bool node_down =
        std::any_of(seen.begin(), seen.end(), [](const Outage& o) { return o.kind != Outage::kCable; });
    if (coordinator_lost(seen)) return "the coordinator was lost";
    if (error.starts_with("coordinator lost")) return "";
    switch (s_.recovery) {
      case RecoveryPolicy::kFailStop:
        return "fail-stop ends the instance at any outage";
      case RecoveryPolicy::kReplan:
        if (survivors_hold(seen) != 1) return "the untouched nodes cannot surely hold the model";
        if (error.starts_with("the client gave up") && static_cast<int>(seen.size()) >= s_.workload.max_tries)
          return "as many outages as the client has tries";
        return "";
      case RecoveryPolicy::kReroute:
        if (node_down) return "a node was lost, which a detour cannot replace";
        for (const Outage& o : seen)
          if (!bridgeable(o, seen)) return "cable " + o.cause + " had no live third node to bridge it";
        return "";
      case RecoveryPolicy::kFallback:
        if (node_down) return "a node was lost, which another network cannot bring back";
        if (!s_.fabric.secondary_link) return "there is no secondary network";
        return "";
    }
    return "";
  }

  void check_failures() {
    const double failed_at = first_event("instance-failed");
    const double end = report_["summary"]["simulated_s"].get<double>();
    for (const auto& r : report_["requests"]) {
      if (r["status"] != "failed") continue;
      const std::string error = r["error"].get<std::string>();
      if (error.starts_with("refused")) continue;  // the workload's verdict on KV capacity, not a failure's
      const double t = failed_at >= 0 && error.starts_with("instance failed") ? failed_at : end;
      if (justification(error, t).empty())
        out_.push_back(
            fmt::format("request {} failed ({}) at {:.3f} s under {}, which the fault schedule does not "
                        "justify",
                        r["id"].get<int>(), error, t, to_string(s_.recovery)));
    }
  }

  void check_suspects() {
    const double ended = first_event("instance-failed");
    for (const auto& e : report_["events"]) {
      if (e["kind"] != "detected") continue;
      const double t = e["t_s"].get<double>();
      const auto seen = noticeable_by(t);
      if (seen.empty()) {
        out_.push_back(
            fmt::format("false suspicion: {} detected at {:.3f} s, when no node or cable had been silent "
                        "for the heartbeat timeout ({} s) or lost a message",
                        e["target"].get<std::string>(), t, bounds_.timeout_s));
        continue;
      }
      // While the instance serves under its coordinator, a detection names a node
      // an outage silenced, or an end of a silenced cable: never a bystander.
      const int target = s_.node_index(e["target"].get<std::string>());
      if (target < 0 || coordinator_lost(seen) || (ended >= 0 && t > ended)) continue;
      if (std::none_of(seen.begin(), seen.end(), [&](const Outage& o) { return touches(o, target); }))
        out_.push_back(
            fmt::format("wrong suspect: {} detected at {:.3f} s, though no outage had silenced it or a "
                        "cable to it (only {})",
                        e["target"].get<std::string>(), t, causes(seen)));
    }
  }

  // Each outage that silences a node well past the timeout must be detected in
  // time while the instance serves, unless the next outage falls before that:
  // the first one, and a later one that strikes an instance recovered from all
  // before it. (The schedule alone does not tell how long a recovery takes, so
  // one in a recovery (after a lost message, even the first), or one after the
  // coordinator or its own node was already lost, is not held to the bound.)
  void check_bounds() {
    double serving_until = -1;
    for (const auto& r : report_["requests"])
      if (r["status"] == "completed") serving_until = std::max(serving_until, r["finish_s"].get<double>());
    for (const auto& e : report_["events"])
      if (e["kind"] == "detected" || e["kind"] == "instance-failed")
        serving_until = std::max(serving_until, e["t_s"].get<double>());
    const double failed_at = first_event("instance-failed");
    for (std::size_t i = 0; i < noticeable_.size(); ++i) {
      const Outage& o = noticeable_[i];
      const double due = o.start_s + bounds_.must_detect_within();
      if (o.kind == Outage::kCable || o.silence_s < bounds_.must_detect_above() || serving_until <= due) continue;
      if (i + 1 < noticeable_.size() && noticeable_[i + 1].start_s <= due) continue;
      if (in_recovery_at(o.start_s) || (i > 0 && !recovered_from_all_before(i, failed_at, due))) continue;
      if (!detected_between(o.start_s, due))
        out_.push_back(
            fmt::format("late detection: {} at {:.3f} s silenced a node, but nothing was detected by {:.3f} s "
                        "(timeout {} s + 3 heartbeats of {} s) while the instance served until {:.3f} s",
                        o.cause, o.start_s, due, bounds_.timeout_s, bounds_.heartbeat_s, serving_until));
    }
  }

  bool detected_between(double from, double to) const {
    return std::any_of(report_["events"].begin(), report_["events"].end(), [&](const json& e) {
      return e["kind"] == "detected" && e["t_s"].get<double>() >= from && e["t_s"].get<double>() <= to;
    });
  }

  // Something was detected before `t` and not yet recovered from.
  bool in_recovery_at(double t) const {
    double last_detected = -1, last_recovered = -1;
    for (const auto& e : report_["events"]) {
      if (e["t_s"].get<double>() >= t) continue;
      if (e["kind"] == "detected") last_detected = std::max(last_detected, e["t_s"].get<double>());
      if (e["kind"] == "recovered") last_recovered = std::max(last_recovered, e["t_s"].get<double>());
    }
    return last_detected > last_recovered;
  }

  // Outage `i` (a later one) strikes a serving instance that has recovered from
  // every earlier outage, or outlived it unnoticed, and still has its node and
  // its coordinator; the instance does not fail by its due time.
  bool recovered_from_all_before(std::size_t i, double failed_at, double due) const {
    const Outage& o = noticeable_[i];
    if (o.kind == Outage::kAnyNodes || (failed_at >= 0 && failed_at <= due)) return false;
    double last_recovered = -1;
    for (const auto& e : report_["events"])
      if (e["kind"] == "recovered" && e["t_s"].get<double>() < o.start_s)
        last_recovered = std::max(last_recovered, e["t_s"].get<double>());
    return std::all_of(noticeable_.begin(), noticeable_.begin() + i, [&](const Outage& p) {
      if (node_lost(p, 0) || touches(p, o.node)) return false;
      const bool unnoticed = p.start_s + p.silence_s < o.start_s && p.silence_s < bounds_.must_detect_above();
      return p.start_s < last_recovered || unnoticed;
    });
  }

  void check_tokens() {
    for (const auto& r : report_["requests"]) {
      const int want = r["output_tokens"].get<int>(), got = r["tokens"].get<int>();
      const bool completed = r["status"] == "completed";
      if (completed ? got != want : got > want)
        out_.push_back(fmt::format("request {} {} with {} tokens of {}: a token produced twice or never",
                                   r["id"].get<int>(), completed ? "completed" : "failed", got, want));
      if (completed && r.contains("output_ids") && r["output_ids"].is_array() &&
          static_cast<int>(r["output_ids"].size()) != want)
        out_.push_back(fmt::format("request {} completed with {} token ids for {} tokens", r["id"].get<int>(),
                                   r["output_ids"].size(), want));
    }
  }

  const Scenario& s_;
  const Catalog& catalog_;
  const json& report_;
  DetectionBounds bounds_;
  std::vector<Outage> noticeable_;                  // silent past the timeout, in start order
  std::vector<std::pair<double, Outage>> noticed_;  // every outage, and from when detection may act on it
  std::vector<std::string> out_;
};

}  // namespace

std::vector<std::string> judge_run(const Scenario& s, const Catalog& catalog, const json& report) {
  return Judge(s, catalog, report).run();
}

}  // namespace engine
