// meshinfer plan as a user runs it: refusals, what-if cards, job-count independence.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <vector>

#include "engine/report/markup.hpp"
#include "support/cli_runner.hpp"
#include "support/html_dom.hpp"

namespace {

using testsupport::read_file;
using testsupport::run_cli;

const std::string kSmallSweep =
    "plan --model qwen3-235b-a22b --quant 8bit --hardware m3-ultra-512gb,m3-ultra-256gb --max-nodes 3 "
    "--links tb5-rdma,10gbe --strategies tensor,pipeline";

TEST(Plan, JobCountDoesNotChangeTheResult) {
  const std::string one = testsupport::fresh_dir("plan-jobs1"), two = testsupport::fresh_dir("plan-jobs2");
  const auto a = run_cli(kSmallSweep + " --jobs 1 --out " + one);
  const auto b = run_cli(kSmallSweep + " --jobs 2 --out " + two);
  ASSERT_EQ(a.exit_code, 0) << a.output;
  ASSERT_EQ(b.exit_code, 0) << b.output;
  const std::string x = read_file(one + "/plan.json");
  EXPECT_FALSE(x.empty());
  EXPECT_TRUE(x == read_file(two + "/plan.json"));
  // Refused candidates stay in the output with their reason.
  const auto plan = nlohmann::json::parse(x);
  bool saw_uneven_refusal = false;
  for (const auto& c : plan["candidates"])
    if (c["status"] == "dropped" && c["reason"].get<std::string>().find("tensor-uneven") != std::string::npos)
      saw_uneven_refusal = true;
  EXPECT_TRUE(saw_uneven_refusal);
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(Plan, HtmlChartsEverySimulatedCandidateAndTheSlo) {
  const std::string out = testsupport::fresh_dir("plan-html");
  const auto r = run_cli(kSmallSweep + " --slo itl=80ms --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto plan = nlohmann::json::parse(read_file(out + "/plan.json"));
  std::size_t simulated = 0;
  for (const auto& c : plan["candidates"]) simulated += c["status"] == "simulated";
  const std::string html = read_file(out + "/plan.html");
  // Each simulated candidate once in each of the three charts (speed and TTFT by node count, price).
  EXPECT_EQ(count(html, "<circle class=\"point"), 3 * simulated);
  EXPECT_EQ(count(html, "data-ttft-s=\""), simulated);
  EXPECT_EQ(count(html, "data-tokens-per-s=\"12.5\"></line>"), 1u);  // the SLO line at 1 / 80 ms
  // Every candidate in a table: the simulated with their verdict and figures
  // rounded for a person to read, the dropped with why.
  EXPECT_EQ(count(html, "<tr data-index="), plan["candidates"].size());
  for (const auto& c : plan["candidates"]) {
    if (c["status"] != "simulated") {
      EXPECT_NE(html.find(engine::escape_markup(c["reason"].get<std::string>())), std::string::npos) << c["reason"];
    } else {
      EXPECT_NE(html.find(fmt::format("<td>{:.1f}</td>", c["figures"]["decode_tokens_per_s"].get<double>())),
                std::string::npos)
          << c["figures"];
      EXPECT_FALSE(std::regex_search(c.value("verdict", ""), std::regex("[-+]0%"))) << c.value("verdict", "");
    }
  }
  EXPECT_FALSE(std::regex_search(html, std::regex("<td>[0-9]+\\.[0-9]{4,}</td>"))) << "a figure left unrounded";
  EXPECT_EQ(count(html, " chosen\""), plan["cheapest_meeting_slo"] == plan["fastest"] ? 1u : 2u);
  // What each added node buys, drawn as report.html draws it: a decode token per simulated node count.
  std::vector<std::string> token_ms;
  for (const auto& p : plan["scaling"]["points"])
    if (p["status"] == "simulated") token_ms.push_back(fmt::format("{}", 1e3 * p["decode"]["token_s"].get<double>()));
  ASSERT_FALSE(token_ms.empty());
  EXPECT_EQ(
      testsupport::attribute_values(testsupport::figure(html, "scaling"), "<g class=\"breakdown\"", "data-token-ms"),
      token_ms);
  EXPECT_NE(html.find("<h2>What each node buys: qwen3-235b-a22b on m3-ultra-512gb, tb5-rdma</h2>"), std::string::npos);
  EXPECT_EQ(html.find("http"), std::string::npos);
}

// Every output says what was asked (the SLO, or none; the workload) and the answer in a line.
TEST(Plan, StatesItsSloWorkloadAndVerdictAndClaimsNoSloNobodyGave) {
  const std::string none = testsupport::fresh_dir("plan-no-slo"), itl = testsupport::fresh_dir("plan-itl-slo");
  const std::string sweep = "plan --model llama-3.3-70b --quant 8bit --hardware m3-ultra-512gb --max-nodes 2 "
                            "--links tb5-rdma --strategies tensor";
  const auto r = run_cli(sweep + " --out " + none);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string md = read_file(none + "/plan.md");
  EXPECT_NE(md.find("\n\nWorkload: 1 request of 512 prompt + 128 output tokens, closed loop, concurrency 1."),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find("SLO"), std::string::npos) << "no SLO line without an SLO\n" << md;
  EXPECT_EQ(r.output.find("SLO"), std::string::npos) << r.output;
  EXPECT_NE(md.find("**Verdict:** the cheapest: #0, 1x m3-ultra-512gb / tb5-rdma / tensor"), std::string::npos) << md;
  EXPECT_EQ(md.find("<= 0 s"), std::string::npos) << md;
  EXPECT_EQ(md.find("meeting the SLO"), std::string::npos) << md;
  EXPECT_EQ(md.find("meets the SLO"), std::string::npos) << md;
  EXPECT_NE(r.output.find("verdict: the cheapest: #0"), std::string::npos) << r.output;
  EXPECT_NE(read_file(none + "/plan.html").find("Verdict: the cheapest: #0"), std::string::npos);

  const auto bounded = run_cli(sweep + " --slo itl=80ms --out " + itl);
  ASSERT_EQ(bounded.exit_code, 0) << bounded.output;
  EXPECT_NE(read_file(itl + "/plan.md").find("SLO: ITL p99 <= 80 ms. Workload:"), std::string::npos);
  EXPECT_NE(bounded.output.find("verdict: the cheapest meeting the SLO: #1, 2x m3-ultra-512gb"), std::string::npos)
      << bounded.output;
}

// The answer comes first, and says why the next smaller cluster would not do:
// the figure it misses by how much, or why it could not even be placed.
TEST(Plan, TheFirstLineIsTheAnswerAndWhyTheNextCheaperFails) {
  const std::string slo = testsupport::fresh_dir("plan-why-slo"), fit = testsupport::fresh_dir("plan-why-fit");
  const auto r = run_cli(
      "plan --model qwen3-235b-a22b --quant 8bit --hardware m3-ultra-512gb,m3-ultra-256gb --max-nodes 3 "
      "--links tb5-rdma --strategies tensor-uneven --slo ttft=0.9s --out " + slo);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.rfind("verdict: the cheapest meeting the SLO: #", 0), 0u) << r.output;
  const std::string first_line = r.output.substr(0, r.output.find('\n'));
  EXPECT_NE(first_line.find("; the next cheaper, #"), std::string::npos) << first_line;
  EXPECT_NE(first_line.find("misses the SLO: TTFT p99 0.940 s > 0.900 s"), std::string::npos) << first_line;
  EXPECT_EQ(read_file(slo + "/plan.md").find("# Capacity plan: qwen3-235b-a22b 8bit\n\n**Verdict:** the cheapest"), 0u);

  const auto dropped = run_cli("plan --model qwen3-235b-a22b --quant 8bit --hardware m3-ultra-256gb --max-nodes 2 "
                               "--links tb5-rdma --strategies tensor --out " + fit);
  ASSERT_EQ(dropped.exit_code, 0) << dropped.output;
  EXPECT_NE(dropped.output.find("; the next cheaper, #0 1x m3-ultra-256gb / tb5-rdma / tensor (8099 USD), dropped: "
                                "tensor: node n1 (m3-ultra-256gb) needs 249.8 GB of weights but has 247.4 GB usable"),
            std::string::npos)
      << dropped.output;
}

TEST(Plan, NothingMeetsAnImpossibleSloAndSaysWhy) {
  const std::string out = testsupport::fresh_dir("plan-impossible");
  const auto r = run_cli(kSmallSweep + " --slo itl=1ms --out " + out);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("no simulated candidate meets the SLO"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("ITL p99"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("> 1.0 ms"), std::string::npos) << r.output;
}

TEST(Plan, ModelThatFitsNowhereIsDroppedEverywhereWithTheShortfall) {
  const std::string out = testsupport::fresh_dir("plan-nofit");
  const auto r = run_cli("plan --model kimi-k2-thinking --hardware m3-ultra-96gb --max-nodes 2 --out " + out);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const auto plan = nlohmann::json::parse(read_file(out + "/plan.json"));
  for (const auto& c : plan["candidates"]) {
    EXPECT_EQ(c["status"], "dropped");
    EXPECT_NE(c["reason"].get<std::string>().find("GB short"), std::string::npos) << c["reason"];
  }
}

TEST(Plan, UnknownCardIsAClearError) {
  const auto r = run_cli("plan --model qwen3-235b-a22b --hardware m5-ultra-1tb");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("m5-ultra-1tb"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("known: dgx-spark"), std::string::npos) << r.output;
}

// itl=80 read as 80 s planned against an SLO nobody meant.
TEST(Plan, AnSloWithoutAUnitIsRefused) {
  const auto r = run_cli(kSmallSweep + " --slo itl=80");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("itl=80"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("a unit, s or ms"), std::string::npos) << r.output;
}

TEST(Plan, WhatIfHardwareCardIsPlannedWith) {
  const std::string dir = testsupport::fresh_dir("plan-whatif");
  std::ofstream(dir + "/future-1tb.json") << R"({"memory_gb": 1000, "usable_memory_fraction": 0.9,
    "memory_bandwidth_gbs": 1200, "peak_tflops_fp16": 40, "ports": {"thunderbolt": 5}, "ssd_read_gbs": 8,
    "idle_watts": 10, "loaded_watts": 300, "price_usd": 15000, "boot_s": 45})";
  const auto r = run_cli("plan --model qwen3-235b-a22b --quant bf16 --card " + dir +
                         "/future-1tb.json --hardware future-1tb "
                         "--max-nodes 1 --out " +
                         dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto plan = nlohmann::json::parse(read_file(dir + "/plan.json"));
  ASSERT_EQ(plan["candidates"].size(), 1u);
  EXPECT_EQ(plan["candidates"][0]["status"], "simulated") << plan["candidates"][0].dump();
  // 470 GB of bf16 weights fit in 900 GB: faster memory than an M3 Ultra decodes faster.
  EXPECT_GT(plan["candidates"][0]["figures"]["decode_tokens_per_s"].get<double>(), 0);
}

}  // namespace

namespace {

// The simulated figure reports/calibration.md gives for a row, or -1.
double calibration_figure(const std::string& row) {
  std::istringstream md(read_file(std::string(MESHINFER_SOURCE_DIR) + "/reports/calibration.md"));
  for (std::string line; std::getline(md, line);) {
    if (line.rfind("| " + row + " |", 0) != 0) continue;
    std::vector<std::string> cells;
    std::istringstream cols(line);
    for (std::string cell; std::getline(cols, cell, '|');) cells.push_back(cell);
    return std::stod(cells.at(3));
  }
  return -1;
}

// Planning the published clusters with a stack's profile gives the calibration report's figures.
TEST(Plan, PublishedConfigurationsAgreeWithTheCalibrationReport) {
  struct Case {
    std::string quant, link, strategy, profile, row_suffix;
  };
  for (const Case& c :
       {Case{"8bit", "tb5-rdma", "tensor", "exo-tensor-rdma", "8bit decode x{} (exo-tensor-rdma)"},
        Case{"q4_k_m", "tb5-tcp", "pipeline", "llamacpp-rpc-tcp", "q4_k_m? decode x{} (llamacpp-rpc-tcp)"}}) {
    const std::string out = testsupport::fresh_dir("plan-published-" + c.profile);
    const auto r = run_cli("plan --model qwen3-235b-a22b --quant " + c.quant +
                           " --hardware m3-ultra-512gb,m3-ultra-256gb --max-nodes 4 --links " + c.link +
                           " --strategies " + c.strategy + " --profile " + c.profile + " --out " + out);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto plan = nlohmann::json::parse(read_file(out + "/plan.json"));
    // The published cluster's first n machines: one 512 GB, two 512 GB, all four.
    const std::vector<std::vector<std::string>> published = {
        {"m3-ultra-512gb"},
        {"m3-ultra-512gb", "m3-ultra-512gb"},
        {"m3-ultra-512gb", "m3-ultra-512gb", "m3-ultra-256gb", "m3-ultra-256gb"}};
    for (const auto& nodes : published) {
      const std::string row = "qwen3-235b-a22b " + fmt::format(fmt::runtime(c.row_suffix), nodes.size());
      const double expected = calibration_figure(row);
      ASSERT_GT(expected, 0) << "no row " << row << " in reports/calibration.md";
      bool found = false;
      for (const auto& cand : plan["candidates"])
        if (cand["nodes"] == nodes && cand["status"] == "simulated") {
          found = true;
          EXPECT_NEAR(cand["figures"]["decode_tokens_per_s_batch1"].get<double>(), expected, 0.01 * expected) << row;
        }
      EXPECT_TRUE(found) << row;
    }
  }
}

}  // namespace
