#include "hw/node_result_codec.hpp"

#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace hw {

using nlohmann::json;

engine::Payload encode_node_report(const NodeReport& r) {
  const engine::NodeResult& n = r.node;
  json steps = json::array();
  for (const auto& s : n.steps)
    steps.push_back({s.start_s, s.end_s, s.compute_s, s.comm_s, s.tokens, s.bytes_to, s.wait_s, s.relayed,
                     s.prefill_tokens, s.modelled.seconds, s.modelled.memory_s, s.modelled.arithmetic_s,
                     s.modelled.dispatch_s, s.modelled.floor_s, s.messages, s.message_s, s.link_bandwidth});
  json events = json::array();
  for (const auto& e : r.events) events.push_back({e.t_s, e.kind, e.target, e.detail});
  const json j{{"compute_s", n.compute_s},
               {"comm_s", n.traffic.comm_s},
               {"wait_s", n.traffic.wait_s},
               {"bytes_to", n.traffic.bytes_to},
               {"messages_to", n.traffic.messages_to},
               {"relayed", n.traffic.relayed},
               {"steps", steps},
               {"error", n.error},
               {"events", events}};
  const std::vector<std::uint8_t> bytes = json::to_cbor(j);
  return engine::Payload::of(std::as_bytes(std::span(bytes)));
}

NodeReport decode_node_report(const engine::Payload& p) {
  try {
    const auto* data = reinterpret_cast<const std::uint8_t*>(p.bytes.data());
    const json j = json::from_cbor(data, data + p.bytes.size());
    NodeReport r;
    engine::NodeResult& n = r.node;
    n.compute_s = j.at("compute_s");
    n.traffic.comm_s = j.at("comm_s");
    n.traffic.wait_s = j.at("wait_s");
    n.traffic.bytes_to = j.at("bytes_to").get<std::vector<std::uint64_t>>();
    n.traffic.messages_to = j.at("messages_to").get<std::vector<std::uint64_t>>();
    n.traffic.relayed = j.at("relayed").get<std::vector<std::uint64_t>>();
    for (const json& s : j.at("steps"))
      n.steps.push_back({s.at(0), s.at(1), s.at(2), s.at(3), s.at(4), s.at(5).get<std::vector<std::uint64_t>>(),
                         s.at(6), s.at(7).get<std::vector<std::uint64_t>>(), s.at(8),
                         engine::OpTime{s.at(9), s.at(10), s.at(11), s.at(12), s.at(13)}, s.at(14), s.at(15),
                         s.at(16)});
    n.error = j.at("error");
    for (const json& e : j.at("events")) r.events.push_back({e.at(0), e.at(1), e.at(2), e.at(3)});
    return r;
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("malformed node report: ") + e.what());
  }
}

}  // namespace hw
