// A long command says how far it is: on a terminal, one line rewritten in
// place and erased before the results; in a log, nothing for a short run.
#include <gtest/gtest.h>

#include "support/cli_runner.hpp"

namespace {

const std::string kPlan =
    " plan --model qwen3-235b-a22b --quant 8bit --hardware m3-ultra-512gb --max-nodes 2 "
    "--links tb5-rdma --jobs 2 --out ";

TEST(Progress, PlanOnATerminalShowsItsSimulationsOnOneLineItErasesBeforeTheResults) {
#ifndef __linux__
  GTEST_SKIP() << "util-linux's script gives the command a terminal";
#endif
  const std::string dir = testsupport::fresh_dir("progress-tty");
  const auto r = testsupport::run_shell("script -qec '" + std::string(MESHINFER_BINARY) + kPlan + dir + "' /dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::size_t line = r.output.find("\r\033[Kplan: ");
  ASSERT_NE(line, std::string::npos) << r.output;
  EXPECT_NE(r.output.find(" simulations, ", line), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\r\033[Kverdict: ", line), std::string::npos) << "the results start on a clean line\n"
                                                                         << r.output;
}

TEST(Progress, PlanInALogPrintsNoneOfItForAShortRun) {
  const std::string dir = testsupport::fresh_dir("progress-log");
  const auto r = testsupport::run_cli(kPlan + dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find(" simulations, "), std::string::npos) << r.output;
  EXPECT_EQ(r.output.rfind("verdict: ", 0), 0u) << r.output;
}

}  // namespace
