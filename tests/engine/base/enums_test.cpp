// The closed sets of engine/base/enums.hpp: one spelling per value, read back the
// same, written to JSON as text.
#include "engine/base/enums.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <vector>

namespace engine {
namespace {

template <class E>
void expect_round_trip() {
  for (E e : all_of<E>()) EXPECT_EQ(parse_name<E>(to_string(e)), e) << to_string(e);
  EXPECT_FALSE(parse_name<E>("no-such-name"));
}

TEST(Choices, EveryValueIsReadBackFromItsName) {
  expect_round_trip<Strategy>();
  expect_round_trip<RecoveryPolicy>();
  expect_round_trip<FaultKind>();
  expect_round_trip<FabricType>();
}

TEST(Choices, JsonHoldsAChoiceAsItsText) {
  EXPECT_EQ(nlohmann::json(Strategy::kTensorUneven), "tensor-uneven");
  EXPECT_EQ(nlohmann::ordered_json({{"policy", RecoveryPolicy::kFallback}}).dump(), R"({"policy":"fallback"})");
  const std::vector<FaultKind> kinds = {FaultKind::kLinkFlap, FaultKind::kRdmaStackFailure};
  EXPECT_EQ(nlohmann::json(kinds).dump(), R"(["link-flap","rdma-stack-failure"])");
  EXPECT_EQ(to_string(Parallelism{}), "auto");
}

TEST(Choices, LinkAndNodeFaultsAreTheOnesSoNamed) {
  for (FaultKind k : all_of<FaultKind>()) {
    EXPECT_EQ(on_link(k), to_string(k).starts_with("link-")) << to_string(k);
    EXPECT_EQ(on_node(k), to_string(k).starts_with("node-")) << to_string(k);
  }
}

}  // namespace
}  // namespace engine
