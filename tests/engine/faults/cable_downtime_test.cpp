// When a scenario's faults leave each cable carrying nothing: what report.json's
// links[].down says and report.html draws.
#include "engine/faults/cable_downtime.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/input/scenario_file.hpp"

namespace {

using engine::FaultKind;

engine::FaultSpec fault(FaultKind kind, double at_s, int node, int peer, double duration_s = 0) {
  engine::FaultSpec f;
  f.kind = kind;
  f.at_s = at_s;
  f.node = node;
  f.peer = peer;
  f.duration_s = duration_s;
  return f;
}

const engine::Catalog& catalog() { return engine::Catalog::builtin(); }

// Four nodes in a full mesh of tb5-rdma (scenarios/ci/link-down-reroute.json) with `faults`, or on `link`.
engine::Scenario mesh(std::vector<engine::FaultSpec> faults, const std::string& link = "tb5-rdma") {
  engine::Scenario s =
      engine::load_scenario(std::string(MESHINFER_SOURCE_DIR) + "/scenarios/ci/link-down-reroute.json", catalog());
  for (auto& c : s.fabric.cables) c.link = link;
  s.faults = std::move(faults);
  return s;
}

// The index of the cable between nodes a and b.
std::size_t cable(const engine::Scenario& s, int a, int b) {
  for (std::size_t k = 0; k < s.fabric.cables.size(); ++k)
    if ((s.fabric.cables[k].a == a && s.fabric.cables[k].b == b) ||
        (s.fabric.cables[k].a == b && s.fabric.cables[k].b == a))
      return k;
  ADD_FAILURE() << "no cable " << a << "-" << b;
  return 0;
}

// "from-to" per downtime, to "end" while still down at the end.
std::vector<std::string> spans(const std::vector<engine::Downtime>& d) {
  std::vector<std::string> out;
  for (const auto& t : d)
    out.push_back(fmt::format("{:.2f}-{}", t.from_s, t.to_s < 0 ? "end" : fmt::format("{:.2f}", t.to_s)));
  return out;
}

TEST(CableDowntime, APulledCableIsDownFromThatMomentToTheEndAndNoOtherIs) {
  const auto s = mesh({fault(FaultKind::kLinkDown, 5, 1, 2)});
  const auto down = engine::cable_downtimes(s, catalog(), 60);
  for (std::size_t k = 0; k < down.size(); ++k)
    EXPECT_EQ(spans(down[k]), k == cable(s, 1, 2) ? std::vector<std::string>{"5.00-end"} : std::vector<std::string>{})
        << "cable " << k;
}

TEST(CableDowntime, ACableBackAfterItsDurationOrAReplugIsUpAgain) {
  auto s = mesh({fault(FaultKind::kLinkDown, 2, 0, 1, 3), fault(FaultKind::kLinkDown, 4, 2, 3),
                 fault(FaultKind::kLinkDown, 5, 2, 3), fault(FaultKind::kLinkUp, 8, 3, 2)});
  const auto down = engine::cable_downtimes(s, catalog(), 60);
  EXPECT_EQ(spans(down[cable(s, 0, 1)]), std::vector<std::string>{"2.00-5.00"});
  EXPECT_EQ(spans(down[cable(s, 2, 3)]), std::vector<std::string>{"4.00-8.00"});  // one replug ends both holds
}

TEST(CableDowntime, AFlapIsDownForEachCycleDuty) {
  engine::FaultSpec f = fault(FaultKind::kLinkFlap, 1, 0, 3, 3);
  f.period_s = 1;
  f.duty = 0.5;
  const auto s = mesh({f});
  EXPECT_EQ(spans(engine::cable_downtimes(s, catalog(), 60)[cable(s, 0, 3)]),
            (std::vector<std::string>{"1.00-1.50", "2.00-2.50", "3.00-3.50"}));
}

TEST(CableDowntime, AFaultDueAfterTheRunEndedTakesNothingDown) {
  const auto s = mesh({fault(FaultKind::kLinkDown, 5, 1, 2)});
  for (const auto& d : engine::cable_downtimes(s, catalog(), 4)) EXPECT_TRUE(d.empty());
}

TEST(CableDowntime, TheRdmaStackFailureTakesEveryThunderboltCableDownForGood) {
  const auto s = mesh({fault(FaultKind::kRdmaStackFailure, 3, -1, -1), fault(FaultKind::kLinkUp, 4, 0, 1)});
  for (const auto& d : engine::cable_downtimes(s, catalog(), 60))
    EXPECT_EQ(spans(d), std::vector<std::string>{"3.00-end"});
}

// The scenario says IP outlives the stack: the cables carry it on, so none is drawn down.
TEST(CableDowntime, AnRdmaStackFailureThatIpSurvivesTakesNoCableDown) {
  engine::FaultSpec f = fault(FaultKind::kRdmaStackFailure, 3, -1, -1);
  f.ip_survives = true;
  for (const auto& d : engine::cable_downtimes(mesh({f}), catalog(), 60)) EXPECT_TRUE(d.empty());
}

TEST(CableDowntime, OnASwitchAFaultTakesTheFirstNodesPortSoEachOfItsCables) {
  const auto s = mesh({fault(FaultKind::kLinkDown, 2, 1, 2)}, "10gbe");
  const auto down = engine::cable_downtimes(s, catalog(), 60);
  for (std::size_t k = 0; k < down.size(); ++k) {
    const bool of_node_1 = s.fabric.cables[k].a == 1 || s.fabric.cables[k].b == 1;
    EXPECT_EQ(spans(down[k]), of_node_1 ? std::vector<std::string>{"2.00-end"} : std::vector<std::string>{}) << k;
  }
}

}  // namespace
