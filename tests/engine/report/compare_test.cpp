// Two reports side by side: what must match exactly, what may differ by its
// tolerance, and reports that cannot be compared.
#include "engine/report/compare.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/base/error.hpp"

namespace engine {
namespace {

using nlohmann::json;
using testing::HasSubstr;

// Only the keys compare reads: a run of two requests, a node crash detected
// after 0.3 s and re-placed 0.1 s later, heartbeats every 0.1 s, timeout 0.5 s.
json report() {
  return {
      {"schema", "meshinfer.report/1"},
      {"scenario", {{"name", "crash"}, {"recovery", {{"heartbeat_s", 0.1}, {"heartbeat_timeout_s", 0.5}}}}},
      {"link_cards", json::array({{{"name", "veth-probed"}, {"bandwidth_gbps", 0.19}}})},
      {"summary",
       {{"decode_tokens_per_s", 100.0},
        {"prefill_tokens_per_s", 800.0},
        {"ttft_s", {{"p50", 0.05}}},
        {"itl_s", {{"p50", 0.01}}},
        {"requests", {{"completed", 2}, {"failed", 0}}}}},
      {"requests", json::array({{{"id", 0}, {"status", "completed"}, {"tokens", 3}, {"output_ids", {5, 6, 7}}},
                                {{"id", 1}, {"status", "completed"}, {"tokens", 3}, {"output_ids", {8, 9, 1}}}})},
      {"events",
       json::array(
           {{{"t_s", 1.0}, {"kind", "node-crash"}, {"target", "m3"}, {"detail", ""}},
            {{"t_s", 1.3}, {"kind", "detected"}, {"target", "m3"}, {"detail", "silent"}},
            {{"t_s", 1.4}, {"kind", "recovered"}, {"target", "m3"}, {"detail", "re-placed on 2 node(s) as tensor"}}})},
      {"faults", {{"injected", 1}, {"time_to_detect_s", 0.3}, {"time_to_recover_s", 0.1}, {"downtime_s", 0.4}}}};
}

std::vector<CompareRow> differing(const json& a, const json& b) {
  auto rows = compare_reports(a, "a.json", b, "b.json");
  std::erase_if(rows, [](const CompareRow& r) { return r.agree; });
  return rows;
}

TEST(Compare, ARunAgreesWithItselfOnEveryRow) {
  const auto rows = compare_reports(report(), "a.json", report(), "b.json");
  EXPECT_TRUE(std::all_of(rows.begin(), rows.end(), [](const CompareRow& r) { return r.agree; }));
  EXPECT_THAT(render_comparison(rows, "a.json", "b.json"), HasSubstr("the runs agree"));
}

TEST(Compare, ARequestThatFailedInOneRunIsADifferingRow) {
  json b = report();
  b["requests"][1]["status"] = "failed";
  const auto rows = differing(report(), b);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].what, "request 1");
  EXPECT_EQ(rows[0].tolerance, "exact");
}

TEST(Compare, RequestsCutOffInBothRunsAgreeOnTheTokensBothProduced) {
  json a = report(), b = report();
  for (json* r : {&a, &b}) (*r)["requests"][1]["status"] = "failed";
  b["requests"][1]["tokens"] = 2;
  b["requests"][1]["output_ids"] = {8, 9};
  EXPECT_TRUE(differing(a, b).empty());
  b["requests"][1]["output_ids"] = {8, 4};
  const auto rows = differing(a, b);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_THAT(rows[0].b, HasSubstr("token ids differ from position 1"));
  EXPECT_EQ(rows[0].tolerance, "failed in both; tokens on their common prefix");
}

TEST(Compare, DifferentTokenIdsAreNamedByTheirFirstPosition) {
  json b = report();
  b["requests"][0]["output_ids"] = {5, 6, 2};
  const auto rows = differing(report(), b);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_THAT(rows[0].b, HasSubstr("token ids differ from position 2"));
}

TEST(Compare, ADifferentRecoveryDecisionIsADifferingRow) {
  json b = report();
  b["events"][2]["detail"] = "re-placed on 2 node(s) as pipeline";
  const auto rows = differing(report(), b);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].what, "decision 1");
}

TEST(Compare, DetectionIsJudgedByTheTimeoutPlusOneHeartbeat) {
  json b = report();
  b["faults"]["time_to_detect_s"] = 0.0;  // a closed connection, seen at once: within 0.6 s
  EXPECT_TRUE(differing(report(), b).empty());
  b["faults"]["time_to_detect_s"] = 1.0;  // 0.7 s later than the other: beyond it
  const auto rows = differing(report(), b);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].what, "detection");
  EXPECT_THAT(rows[0].tolerance, HasSubstr("0.600 s"));
}

TEST(Compare, SpeedsAreJudgedRelatively) {
  json b = report();
  b["summary"]["decode_tokens_per_s"] = 90.0;  // 10% off: within 15%
  EXPECT_TRUE(differing(report(), b).empty());
  b["summary"]["decode_tokens_per_s"] = 80.0;
  const auto rows = differing(report(), b);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].what, "decode");
}

TEST(Compare, RunsOnDifferentLinkCardsDoNotAgree) {
  json b = report();
  b["link_cards"][0]["bandwidth_gbps"] = 80;
  const auto rows = differing(report(), b);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].what, "link cards");
}

TEST(Compare, AReportWithoutAKeyIsRefusedNamingFileAndPath) {
  json b = report();
  b["summary"].erase("decode_tokens_per_s");
  try {
    compare_reports(report(), "a.json", b, "b.json");
    FAIL() << "accepted a report without its decode speed";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "b.json");
    EXPECT_EQ(e.json_path(), "/summary/decode_tokens_per_s");
  }
}

}  // namespace
}  // namespace engine
