#include "hw/node_process.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <memory>
#include <thread>

#include "engine/base/error.hpp"
#include "engine/base/tags.hpp"
#include "engine/node/liveness.hpp"
#include "engine/node/recovery.hpp"
#include "hw/node_result_codec.hpp"
#include "hw/report_watch.hpp"

namespace hw {

namespace {

// How long the reporter waits for a live node's results: a node may still be
// waiting (bounded) for a recovery decision when the coordinator finishes.
constexpr double kGatherTimeoutS = 60;

// The heartbeat loop's runtime: its sleep between beats ends within a few
// milliseconds of the node leaving the instance, so a finished run does not
// wait out the rest of a beat (50 ms by default, half of a short run's
// start-up and load) before it reports.
class LeaveWakesSleep : public engine::ForwardingRuntime {
 public:
  LeaveWakesSleep(engine::Runtime& inner, const engine::Liveness& m) : ForwardingRuntime(inner), m_(m) {}
  void sleep_for(double seconds) override {
    constexpr double kSlice = 0.005;
    const double until = now() + seconds;
    for (double left = seconds; left > 0 && !m_.left(); left = until - now()) inner_.sleep_for(std::min(left, kSlice));
  }

 private:
  const engine::Liveness& m_;
};

// Both runtimes of a node on one clock, so the heartbeat thread's "heard at"
// and the main loop's "now" compare.
class SharedClockRuntime : public engine::ForwardingRuntime {
 public:
  SharedClockRuntime(engine::Runtime& inner, std::chrono::steady_clock::time_point zero)
      : ForwardingRuntime(inner), zero_(zero) {}
  double now() const override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - zero_).count();
  }

 private:
  std::chrono::steady_clock::time_point zero_;
};

// Whether `k`, now gone, said it reports: this rank was stopped meanwhile
// (a hang), and finds the run over when it resumes.
bool reported_by(engine::Runtime& rt, int k) {
  try {
    rt.recv(k, engine::tags::kReporting, 0);
    return true;
  } catch (const engine::Timeout&) {
  } catch (const engine::PeerFailure&) {
  }
  return false;
}

// Sends this node's report to the lowest rank below it still alive. False
// when there is none: this node is the reporter. True, sending nothing, when
// a rank below it reported already.
bool send_to_reporter(engine::Runtime& rt, ReportWatch& watch, const NodeReport& mine) {
  for (int k = 0; k < rt.rank(); ++k) {
    if (!watch.alive(k)) {
      if (reported_by(rt, k)) return true;
      continue;
    }
    try {
      rt.send(k, engine::tags::kResult, encode_node_report(mine));
      return true;
    } catch (const engine::PeerFailure&) {
    }
  }
  return false;
}

// The report of `k`, a rank above the reporter. Throws std::runtime_error
// saying why there is none.
NodeReport report_of(engine::Runtime& rt, ReportWatch& watch, int k) {
  const double deadline = rt.now() + kGatherTimeoutS;
  for (;;) {
    try {
      return decode_node_report(rt.recv(k, engine::tags::kResult, ReportWatch::kPollS));
    } catch (const engine::PeerFailure& e) {
      throw std::runtime_error(std::string("process lost: ") + e.what());
    } catch (const engine::Timeout&) {
      if (rt.now() >= deadline) throw std::runtime_error(fmt::format("no results in {} s", kGatherTimeoutS));
    }
    watch.poll(0);
    if (watch.gone(k)) throw std::runtime_error("process lost: silent on the heartbeat channel after its run");
  }
}

void gather(engine::Runtime& rt, ReportWatch& watch, engine::RunResult& out) {
  for (int k = 0; k < rt.world(); ++k) {
    if (k == rt.rank()) continue;
    std::string lost = "process lost (rank " + std::to_string(k) + " below the reporter is unreachable)";
    if (k > rt.rank()) {
      try {
        NodeReport theirs = report_of(rt, watch, k);
        const engine::TrafficStats& t = theirs.node.traffic;
        if (t.bytes_to.size() != out.nodes.size() || t.messages_to.size() != out.nodes.size())
          throw std::runtime_error("malformed node report: traffic for a cluster of another size");
        out.nodes[k] = std::move(theirs.node);
        out.events.insert(out.events.end(), theirs.events.begin(), theirs.events.end());
        continue;
      } catch (const std::runtime_error& e) {  // lost, silent, or a malformed report
        lost = e.what();
      }
    }
    if (out.nodes[k].error.empty()) out.nodes[k].error = lost;
  }
}

}  // namespace

NodeOutcome run_node_process(const ClusterSpec& cluster, int rank, const TransportOptions& transport,
                             const engine::EngineSetup& setup, const JoinedFn& joined,
                             const std::vector<engine::AddedLatency>& delays) {
  const int world = cluster.world();
  if (static_cast<int>(setup.scenario.nodes.size()) != world)
    throw engine::InputError(cluster.file, "",
                             "the cluster has " + std::to_string(world) + " host(s) but scenario " +
                                 setup.scenario.file + " has " + std::to_string(setup.scenario.nodes.size()) +
                                 " node(s)");
  // Strangers dropped during bootstrap go into the report, as events of this node.
  std::vector<std::string> refused;
  TransportOptions options = transport;
  options.refused = [&](const std::string& what) {
    refused.push_back(what);
    transport.refused(what);
  };
  // `data` is closed first (declared last): a rank's report is flushed before
  // it waits for its peers to close their heartbeat connections.
  std::unique_ptr<engine::Runtime> beats;
  const auto data = with_secondary_network(make_runtime(cluster, rank, options), cluster, rank, cluster.port, options);
  beats = with_secondary_network(make_tcp_runtime(cluster, rank, cluster.port + 1, options), cluster, rank,
                                 cluster.port + 1, options);
  // Every rank leaves the second barrier at about the same time: count from there,
  // as if each had just heard every other.
  const auto zero = std::chrono::steady_clock::now();
  if (joined) joined(std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  SharedClockRuntime rt(*data, zero), heartbeat_rt(*beats, zero);
  engine::DelayedRuntime delayed(rt, delays);

  NodeOutcome outcome;
  engine::RunResult& out = outcome.result;
  out.nodes.resize(world);
  engine::Liveness liveness(world, setup.scenario.heartbeat_s, setup.scenario.heartbeat_timeout_s);
  // What ends the heartbeat loop ends this node with an error (main reports it), never the process.
  std::exception_ptr beats_failed;
  std::thread heartbeats([&] {
    try {
      engine::DelayedRuntime delayed_beats(heartbeat_rt, delays);
      LeaveWakesSleep beats_rt(delayed_beats, liveness);
      engine::run_heartbeats(beats_rt, liveness);
    } catch (...) {
      beats_failed = std::current_exception();
    }
  });
  try {
    engine::run_node(delayed, liveness, setup, out);  // ends the heartbeat loop when it returns
  } catch (...) {
    liveness.leave();
    heartbeats.join();
    throw;
  }
  heartbeats.join();
  delayed.flush();  // the results below go straight to the reporter, behind this node's last messages
  if (beats_failed) std::rethrow_exception(beats_failed);
  for (const std::string& what : refused)
    out.events.push_back({0, "refused", setup.scenario.nodes[rank].name, "refused " + what});

  NodeReport mine{out.nodes[rank], out.events};
  ReportWatch watch(heartbeat_rt, setup.scenario.heartbeat_s, setup.scenario.heartbeat_timeout_s);
  const bool sent = send_to_reporter(rt, watch, mine);
  if (!sent) {
    gather(rt, watch, out);
    // A rank stopped until now finds this when it resumes, and leaves the report to this one.
    for (int k = 0; k < world; ++k) {
      try {
        if (k != rank) rt.send(k, engine::tags::kReporting, engine::Payload{});
      } catch (const engine::PeerFailure&) {
      }
    }
  }
  watch.give_up_the_gone({&rt, &heartbeat_rt});
  if (sent) return outcome;
  outcome.reporter = true;
  // Rank 0 died with its scheduler: what survives is the workload each rank
  // derived, so every request is reported lost with the coordinator.
  if (!out.scheduler)
    out.scheduler =
        std::make_shared<engine::Scheduler>(setup.requests, setup.scenario.workload, setup.plan.kv_capacity_tokens);
  engine::finish_run(out, rt.now());
  std::stable_sort(out.events.begin(), out.events.end(),
                   [](const engine::RunEvent& a, const engine::RunEvent& b) { return a.t_s < b.t_s; });
  return outcome;
}

}  // namespace hw
