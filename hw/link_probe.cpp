#include "hw/link_probe.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <span>
#include <stdexcept>

#include "engine/base/tags.hpp"

namespace hw {

namespace {

constexpr std::uint64_t kPingBytes = 8;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Bandwidth from the time of `bytes` plus one small message back (a round trip's worth of latency).
double bandwidth(std::uint64_t bytes, double elapsed_s, double round_trip_s) {
  return static_cast<double>(bytes) / std::max(elapsed_s - round_trip_s, 1e-9);
}

PairFigures measure_from_a(engine::Runtime& rt, int b, const ProbeOptions& o) {
  PairFigures f{rt.rank(), b, 0, 0, 0};
  std::vector<double> rtts;
  for (int i = 0; i < o.pings; ++i) {
    const double t0 = rt.now();
    rt.send(b, engine::tags::kPing, engine::Payload::sized(kPingBytes));
    rt.recv(b, engine::tags::kPing, o.timeout_s);
    rtts.push_back(rt.now() - t0);
  }
  const double rtt = median(rtts);
  f.latency_s = rtt / 2;
  std::vector<double> ab, ba;
  for (int i = 0; i <= o.bulk_repeats; ++i) {
    double t0 = rt.now();
    rt.send(b, engine::tags::kBulk, engine::Payload::sized(o.bulk_bytes));
    rt.recv(b, engine::tags::kAck, o.timeout_s);
    if (i > 0) ab.push_back(bandwidth(o.bulk_bytes, rt.now() - t0, rtt));
    t0 = rt.now();
    rt.send(b, engine::tags::kGo, engine::Payload::sized(kPingBytes));
    rt.recv(b, engine::tags::kBulk, o.timeout_s);
    if (i > 0) ba.push_back(bandwidth(o.bulk_bytes, rt.now() - t0, rtt));
  }
  f.bandwidth_ab = median(ab);
  f.bandwidth_ba = median(ba);
  return f;
}

void answer_as_b(engine::Runtime& rt, int a, const ProbeOptions& o) {
  for (int i = 0; i < o.pings; ++i) {
    rt.recv(a, engine::tags::kPing, o.timeout_s);
    rt.send(a, engine::tags::kPing, engine::Payload::sized(kPingBytes));
  }
  for (int i = 0; i <= o.bulk_repeats; ++i) {
    rt.recv(a, engine::tags::kBulk, o.timeout_s);
    rt.send(a, engine::tags::kAck, engine::Payload::sized(kPingBytes));
    rt.recv(a, engine::tags::kGo, o.timeout_s);
    rt.send(a, engine::tags::kBulk, engine::Payload::sized(o.bulk_bytes));
  }
}

// Rank 0 releases everyone once all have arrived.
void barrier(engine::Runtime& rt, double timeout_s) {
  if (rt.rank() == 0) {
    for (int r = 1; r < rt.world(); ++r) rt.recv(r, engine::tags::kDone, timeout_s);
    for (int r = 1; r < rt.world(); ++r) rt.send(r, engine::tags::kDone, engine::Payload{});
  } else {
    rt.send(0, engine::tags::kDone, engine::Payload{});
    rt.recv(0, engine::tags::kDone, timeout_s);
  }
}

engine::Payload encode(const PairFigures& f) {
  std::byte bytes[sizeof f];
  std::memcpy(bytes, &f, sizeof f);
  return engine::Payload::of(bytes);
}

}  // namespace

std::vector<BusyRound> busy_rounds(engine::Runtime& rt, const ProbeOptions& o) {
  std::vector<std::uint64_t> sizes{kPingBytes};
  sizes.insert(sizes.end(), o.round_sizes.begin(), o.round_sizes.end());
  std::vector<double> mine;  // this rank's median round, per size
  for (const std::uint64_t bytes : sizes) {
    barrier(rt, o.timeout_s);
    std::vector<double> rounds;
    for (int i = 0; i < o.pings; ++i) {
      const double t0 = rt.now();
      for (int p = 0; p < rt.world(); ++p)
        if (p != rt.rank()) rt.send(p, engine::tags::kRound, engine::Payload::sized(bytes));
      for (int p = 0; p < rt.world(); ++p)
        if (p != rt.rank()) rt.recv(p, engine::tags::kRound, o.timeout_s);
      rounds.push_back(rt.now() - t0);
    }
    mine.push_back(rounds.empty() ? 0 : median(rounds));
  }
  if (rt.rank() != 0) {
    rt.send(0, engine::tags::kFigures, engine::Payload::of(std::as_bytes(std::span(mine))));
    return {};
  }
  std::vector<std::vector<double>> all(sizes.size());
  for (std::size_t k = 0; k < sizes.size(); ++k) all[k].push_back(mine[k]);
  for (int r = 1; r < rt.world(); ++r) {
    const engine::Payload p = rt.recv(r, engine::tags::kFigures, o.timeout_s);
    std::vector<double> theirs(sizes.size());
    if (p.bytes.size() != theirs.size() * sizeof(double))
      throw std::runtime_error("malformed busy rounds from rank " + std::to_string(r));
    std::memcpy(theirs.data(), p.bytes.data(), p.bytes.size());
    for (std::size_t k = 0; k < sizes.size(); ++k) all[k].push_back(theirs[k]);
  }
  std::vector<BusyRound> out;
  for (std::size_t k = 0; k < sizes.size(); ++k) out.push_back({sizes[k], median(all[k])});
  return out;
}

std::vector<PairFigures> probe_links(engine::Runtime& rt, const ProbeOptions& o) {
  std::vector<PairFigures> mine;
  for (int a = 0; a < rt.world(); ++a) {
    for (int b = a + 1; b < rt.world(); ++b) {
      if (rt.rank() == a) mine.push_back(measure_from_a(rt, b, o));
      if (rt.rank() == b) answer_as_b(rt, a, o);
      // A pair's wait must not be timed against the next's: bound by a whole pair's work.
      barrier(rt, o.timeout_s * (o.pings + 2 * o.bulk_repeats + 2));
    }
  }
  if (rt.rank() != 0) {
    for (const auto& f : mine) rt.send(0, engine::tags::kFigures, encode(f));
    return {};
  }
  std::vector<PairFigures> all = mine;
  for (int a = 1; a < rt.world(); ++a) {
    for (int b = a + 1; b < rt.world(); ++b) {
      const engine::Payload p = rt.recv(a, engine::tags::kFigures, o.timeout_s);
      PairFigures f;
      std::memcpy(&f, p.bytes.data(), sizeof f);
      all.push_back(f);
    }
  }
  return all;
}

nlohmann::json figures_json(const std::vector<PairFigures>& pairs) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : pairs)
    out.push_back({{"a", f.a},
                   {"b", f.b},
                   {"latency_s", f.latency_s},
                   {"bandwidth_ab", f.bandwidth_ab},
                   {"bandwidth_ba", f.bandwidth_ba}});
  return out;
}

std::vector<PairFigures> figures_from_json(const nlohmann::json& j) {
  try {
    if (!j.is_array()) throw std::runtime_error("the probe's figures are not a JSON array");
    std::vector<PairFigures> out;
    for (const auto& f : j)
      out.push_back({f.at("a"), f.at("b"), f.at("latency_s"), f.at("bandwidth_ab"), f.at("bandwidth_ba")});
    return out;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("not the figures of `meshinfer probe --figures-json`: ") + e.what());
  }
}

nlohmann::ordered_json link_card(const std::string& name, const std::vector<PairFigures>& pairs,
                                 const std::string& port_kind, std::size_t frame_bytes, std::size_t frame_header_bytes,
                                 const std::vector<BusyRound>& rounds) {
  std::vector<double> latencies, bandwidths;
  std::string notes = "Measured by `meshinfer probe` (round trip / 2 of small messages; bandwidth of timed transfers).";
  for (const auto& f : pairs) {
    latencies.push_back(f.latency_s);
    bandwidths.push_back(f.bandwidth_ab);
    bandwidths.push_back(f.bandwidth_ba);
    notes += fmt::format(" {}-{}: {:.1f} us, {:.1f}/{:.1f} MB/s.", f.a, f.b, f.latency_s * 1e6, f.bandwidth_ab / 1e6,
                         f.bandwidth_ba / 1e6);
  }
  const double latency_s = median(latencies);
  int world = 0;
  for (const auto& f : pairs) world = std::max(world, f.b + 1);
  nlohmann::ordered_json card;
  card["name"] = name;
  card["bandwidth_gbps"] = median(bandwidths) * 8 / 1e9;
  card["latency_us"] = latency_s * 1e6;
  card["per_message_overhead_us"] = 0;
  card["frame_bytes"] = frame_bytes;
  if (frame_header_bytes > 0) card["frame_header_bytes"] = frame_header_bytes;
  card["port_kind"] = port_kind;
  card["switched"] = false;
  if (rounds.empty()) {
    card["notes"] = notes + " Latency includes the stack's per-message cost, so per_message_overhead_us is 0.";
    return card;
  }
  // The latency, an idle small message's one-way time, holds that message's time on the wire (over RDMA a
  // whole padded frame): the small round beyond it is the overhead of each peer's message, and a larger
  // round beyond the small one is its messages' time on the wire (a time below the previous size's is noise,
  // read as the previous).
  const BusyRound& small = rounds.front();
  card["per_message_overhead_us"] = std::max(0.0, (small.round_s - latency_s) / (world - 1)) * 1e6;
  notes += fmt::format(
      " Every rank messaging every other at once took {:.1f} us a round: per_message_overhead_us is what that adds per "
      "peer to an idle message (latency includes the idle stack's cost).",
      small.round_s * 1e6);
  double wire_s = 0;
  for (const BusyRound& r : rounds) {
    wire_s = std::max(wire_s, r.round_s - small.round_s);
    card["wire_time_by_size"].push_back({{"bytes", r.bytes}, {"us", wire_s * 1e6}});
    if (&r != &small) notes += fmt::format(" {} bytes: {:.1f} us a round.", r.bytes, r.round_s * 1e6);
  }
  card["notes"] = notes;
  return card;
}

}  // namespace hw
