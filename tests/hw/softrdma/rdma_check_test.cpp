// meshinfer rdma-check, the kit for the real Macs, run on softrdma preloaded:
// every rule softrdma enforces is reported as documented, and a rule the
// device is told to relax (SOFTRDMA_ALLOW) or a failed stack is reported.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "softrdma_fixture.hpp"
#include "support/child_process.hpp"
#include "support/cli_runner.hpp"

namespace {

struct Check {
  int exit_code = -1;
  std::string output;
  std::map<std::string, std::string> verdicts;  // rule -> verdict on rdma_lo
};

Check rdma_check(const std::vector<std::string>& settings, const std::string& name) {
  const std::string json = testsupport::fresh_dir(name) + "/rdma-check.json";
  testsupport::ChildProcess p(
      softrdma_test::preloaded(settings, {MESHINFER_BINARY, "rdma-check", "--device", "rdma_lo", "--json", json}));
  Check c;
  c.exit_code = p.wait(120);
  c.output = p.output();
  const nlohmann::json report = nlohmann::json::parse(testsupport::read_file(json));
  for (const auto& rule : report.at("devices").at(0).at("rules"))
    c.verdicts[rule.at("rule").get<std::string>()] = rule.at("verdict").get<std::string>();
  return c;
}

TEST(RdmaCheck, FindsEveryRuleAsDocumentedOnSoftrdma) {
  Check c = rdma_check({}, "rdma-check-plain");
  EXPECT_EQ(c.exit_code, 0) << c.output;
  for (const char* rule :
       {"ipv4-gid", "uc-only", "local-write-mr", "recv-before-rts", "send-recv-only", "mtu", "frame-limit"})
    EXPECT_EQ(c.verdicts[rule], "as documented") << rule << " in\n" << c.output;
  EXPECT_NE(c.output.find("largest crossing 4096 B"), std::string::npos) << c.output;
}

TEST(RdmaCheck, ReportsTheLargerFramesOfMacos263AsDocumented) {
  Check c = rdma_check({"SOFTRDMA_MAX_FRAME=524288"}, "rdma-check-263");
  EXPECT_EQ(c.verdicts["frame-limit"], "as documented") << c.output;
  EXPECT_NE(c.output.find("largest crossing 524288 B"), std::string::npos) << c.output;
}

TEST(RdmaCheck, ReportsTheRulesADeviceRelaxesAsDiffering) {
  Check c = rdma_check({"SOFTRDMA_ALLOW=recv-before-rts,local-write-mr"}, "rdma-check-allow");
  EXPECT_EQ(c.exit_code, 1) << c.output;
  EXPECT_EQ(c.verdicts["local-write-mr"], "differs") << c.output;
  EXPECT_EQ(c.verdicts["recv-before-rts"], "differs") << c.output;
  EXPECT_EQ(c.verdicts["uc-only"], "as documented") << c.output;
}

TEST(RdmaCheck, ReportsNothingObservedOnAFailedStack) {
  const std::string flag = testsupport::fresh_dir("rdma-check-failed") + "/failed";
  std::fclose(std::fopen(flag.c_str(), "w"));
  Check c = rdma_check({"SOFTRDMA_FAIL_FILE=" + flag}, "rdma-check-failed-run");
  EXPECT_EQ(c.exit_code, 1) << c.output;
  EXPECT_EQ(c.verdicts["uc-only"], "not observed") << c.output;
  EXPECT_NE(c.output.find("no such device"), std::string::npos) << c.output;
}

}  // namespace
