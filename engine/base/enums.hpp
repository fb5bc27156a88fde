// The closed sets an input chooses from: parallel strategy, recovery policy,
// fault kind, fabric type and simulation level. Each is an enum class,
// compared as a value; its text is parsed once where it comes in (the readers
// via choice() in engine/base/json_input.hpp, the CLI via parse_name()) and printed
// via to_string().
#pragma once

#include <array>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace engine {

enum class Strategy { kTensor, kTensorUneven, kPipeline, kExpert };
enum class RecoveryPolicy { kFailStop, kReroute, kReplan, kFallback };
enum class FaultKind {
  kLinkDown,
  kLinkUp,
  kLinkDegrade,
  kLinkFlap,
  kNodeCrash,
  kNodeHang,
  kNodeSlow,
  kNodeRestart,
  kRdmaStackFailure,
  kTcpInstability,
  kRdmaPacketLoss
};
enum class FabricType { kFullMesh, kCables };
// How the simulator times collectives: each message, or each collective as a whole (sim/flow_board.hpp).
enum class SimulationLevel { kMessage, kFlow };

// Names<E>::value[i] is the text of the E whose value is i: the spelling of
// scenario files, reports and the CLI (the schema's enums must match; a test checks).
template <class E>
struct Names;
template <>
struct Names<Strategy> {
  static constexpr std::array<std::string_view, 4> value = {"tensor", "tensor-uneven", "pipeline", "expert"};
};
template <>
struct Names<RecoveryPolicy> {
  static constexpr std::array<std::string_view, 4> value = {"fail-stop", "reroute", "replan", "fallback"};
};
template <>
struct Names<FaultKind> {
  static constexpr std::array<std::string_view, 11> value = {
      "link-down", "link-up",      "link-degrade",       "link-flap",       "node-crash",      "node-hang",
      "node-slow", "node-restart", "rdma-stack-failure", "tcp-instability", "rdma-packet-loss"};
};
template <>
struct Names<FabricType> {
  static constexpr std::array<std::string_view, 2> value = {"full-mesh", "cables"};
};
template <>
struct Names<SimulationLevel> {
  static constexpr std::array<std::string_view, 2> value = {"message", "flow"};
};

// The text of `e`. (Constrained so that it never competes with to_string(Parallelism).)
template <class E>
requires std::is_enum_v<E> std::string to_string(E e) {
  return std::string(Names<E>::value.at(static_cast<std::size_t>(e)));
}

// Every value of E, in declaration order.
template <class E>
constexpr auto all_of() {
  std::array<E, Names<E>::value.size()> out{};
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<E>(i);
  return out;
}

// The E spelled `text`; nothing when no E is.
template <class E>
std::optional<E> parse_name(std::string_view text) {
  for (std::size_t i = 0; i < Names<E>::value.size(); ++i)
    if (Names<E>::value[i] == text) return static_cast<E>(i);
  return std::nullopt;
}

// A scenario's parallelism: a strategy, or none for "auto" (the planner picks).
using Parallelism = std::optional<Strategy>;
inline std::string to_string(const Parallelism& p) { return p ? to_string(*p) : "auto"; }

// Faults of a cable between two nodes (link-*), and of one node (node-*): adjacent in FaultKind.
inline bool on_link(FaultKind k) { return k >= FaultKind::kLinkDown && k <= FaultKind::kLinkFlap; }
inline bool on_node(FaultKind k) { return k >= FaultKind::kNodeCrash && k <= FaultKind::kNodeRestart; }

}  // namespace engine

// In nlohmann::json, a choice is its text, never its number.
namespace nlohmann {
template <class E>
requires std::is_enum_v<E> && requires { engine::Names<E>::value; }
struct adl_serializer<E> {
  template <class Json>
  static void to_json(Json& j, E e) {
    j = engine::to_string(e);
  }
};
}  // namespace nlohmann
