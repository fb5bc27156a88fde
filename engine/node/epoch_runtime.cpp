#include "engine/node/epoch_runtime.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "engine/base/enums.hpp"
#include "engine/base/error.hpp"

namespace engine {

EpochRuntime::EpochRuntime(Runtime& physical, Liveness& m, std::vector<int> members, int epoch)
    : ForwardingRuntime(physical), m_(m), members_(std::move(members)), epoch_(epoch) {
  rank_ = static_cast<int>(std::find(members_.begin(), members_.end(), physical.rank()) - members_.begin());
  // What earlier epochs left behind would wait forever: nobody asks for it again.
  physical.drop_waiting([epoch](int wire) { return tags::fenced_before(wire, epoch); });
}

void EpochRuntime::send(int dst, int tag, Payload payload) {
  physical_.send(members_.at(dst), fenced(tag), std::move(payload));
}

template <class Attempt>
auto EpochRuntime::wait_on_members(double timeout_s, const Attempt& attempt) {
  check_refused();  // even when messages never keep it waiting
  const double give_up = now() + timeout_s;
  // The heartbeats tell the others how long this node has waited.
  struct Waiting {
    Liveness& m;
    ~Waiting() { m.set_waiting_since(-1); }
  } waiting{m_};
  m_.set_waiting_since(now());
  for (;;) {
    const double slice = std::min(m_.heartbeat_s(), give_up - now());
    try {
      return attempt(std::max(slice, 0.0));
    } catch (const Timeout&) {
      check_cluster();
      if (now() >= give_up) throw;
    }
  }
}

Payload EpochRuntime::recv(int src, int tag, double timeout_s) {
  return wait_on_members(timeout_s, [&](double slice) { return physical_.recv(members_.at(src), fenced(tag), slice); });
}

double EpochRuntime::run_flows(const Flows& flows, double timeout_s) {
  Flows& physical = physical_flows_;
  physical.tag = fenced(flows.tag);
  physical.members.clear();
  for (int m : flows.members) physical.members.push_back(members_.at(m));
  physical.phases.resize(flows.phases.size());
  for (std::size_t k = 0; k < flows.phases.size(); ++k) {
    physical.phases[k] = flows.phases[k];
    for (auto& send : physical.phases[k].sends) send.first = members_.at(send.first);
    for (int& src : physical.phases[k].receives) src = members_.at(src);
  }
  return wait_on_members(timeout_s, [&](double slice) { return physical_.run_flows(physical, slice); });
}

void EpochRuntime::check_refused() const {
  if (!m_.any_refused()) return;
  for (int p : members_)
    if (std::string why = m_.refused(p); p != physical_.rank() && !why.empty()) throw PeerFailure(p, why);
}

void EpochRuntime::check_cluster() {
  if (m_.coordinator_epoch() > epoch_) throw Reconfigure();
  check_refused();
  for (int p : members_)
    if (p != physical_.rank() && m_.suspected(p, now()))
      throw PeerFailure(p, "silent for more than " + std::to_string(m_.timeout_s()) + " s");
  if (physical_.rank() != 0) return;
  for (int p : members_) {
    if (p == 0) continue;
    try {
      const ControlMessage report = receive_control(physical_, p, 0);
      if (report.kind != ControlMessage::kAbort || report.epoch != epoch_) continue;
      // The coordinator is alive by definition: a member that cannot hear it is the one cut off.
      if (report.peer == physical_.rank()) throw PeerFailure(p, "cannot hear the coordinator");
      throw PeerFailure(report.peer, "reported failed by rank " + std::to_string(p), p);
    } catch (const Timeout&) {
    }
  }
  if (m_.stalled(members_, physical_.rank(), epoch_, now()))
    throw MessageLost(fmt::format("every member has waited on another for over {} s, none silent: a message was lost",
                                  m_.timeout_s()));
}

Payload ControlMessage::encode() const {
  std::vector<std::int32_t> words{kind, epoch, peer, strategy, secondary, static_cast<std::int32_t>(members.size())};
  words.insert(words.end(), members.begin(), members.end());
  for (const Detour& d : detours) words.insert(words.end(), {d.from, d.to, d.relay});
  std::vector<std::byte> bytes(words.size() * sizeof(std::int32_t));
  std::memcpy(bytes.data(), words.data(), bytes.size());
  return Payload::of(bytes);
}

ControlMessage ControlMessage::decode(const Payload& p, int world) {
  constexpr std::size_t kFixed = 6;
  if (p.bytes.size() % sizeof(std::int32_t) != 0 || p.bytes.size() < kFixed * sizeof(std::int32_t))
    throw std::invalid_argument(fmt::format("{} bytes, not a whole control message", p.bytes.size()));
  std::vector<std::int32_t> words(p.bytes.size() / sizeof(std::int32_t));
  std::memcpy(words.data(), p.bytes.data(), p.bytes.size());
  const auto rest = static_cast<std::int64_t>(words.size() - kFixed);
  if (words[5] < 0 || words[5] > rest || (rest - words[5]) % 3 != 0)
    throw std::invalid_argument(fmt::format("{} members do not fit its {} words", words[5], words.size()));
  const auto is_rank = [world](std::int32_t r) { return r >= 0 && r < world; };
  if (words[0] < kAbort || words[0] > kStop) throw std::invalid_argument(fmt::format("unknown kind {}", words[0]));
  if (words[1] < 0) throw std::invalid_argument(fmt::format("epoch {}", words[1]));
  if (words[2] != -1 && !is_rank(words[2])) throw std::invalid_argument(fmt::format("peer {}", words[2]));
  if (words[3] < 0 || words[3] >= static_cast<std::int32_t>(Names<Strategy>::value.size()))
    throw std::invalid_argument(fmt::format("unknown strategy {}", words[3]));
  if (words[4] != 0 && words[4] != 1) throw std::invalid_argument(fmt::format("secondary flag {}", words[4]));
  if (!std::all_of(words.begin() + kFixed, words.end(), is_rank))
    throw std::invalid_argument(fmt::format("a rank outside 0..{}", world - 1));
  std::vector<std::int32_t> members(words.begin() + kFixed, words.begin() + kFixed + words[5]);
  std::sort(members.begin(), members.end());
  if (std::adjacent_find(members.begin(), members.end()) != members.end())
    throw std::invalid_argument("a member listed twice");
  ControlMessage m;
  m.kind = static_cast<Kind>(words[0]);
  m.epoch = words[1];
  m.peer = words[2];
  m.strategy = words[3];
  m.secondary = words[4];
  const auto detours = words.begin() + kFixed + words[5];
  m.members.assign(words.begin() + kFixed, detours);
  for (auto w = detours; w != words.end(); w += 3) m.detours.push_back({w[0], w[1], w[2]});
  return m;
}

ControlMessage receive_control(Runtime& rt, int src, double timeout_s) {
  const Payload p = rt.recv(src, tags::kControl, timeout_s);
  try {
    return ControlMessage::decode(p, rt.world());
  } catch (const std::invalid_argument& e) {
    throw PeerFailure(src, std::string("malformed control message: ") + e.what());
  }
}

}  // namespace engine
