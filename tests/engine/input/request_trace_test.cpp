// Request logs as teams have them: the Azure and BurstGPT column layouts read
// as they are, time scaled and windowed, and a bad row refused with its line.
#include "engine/input/request_trace.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "engine/base/error.hpp"
#include "engine/input/scenario.hpp"
#include "engine/input/scenario_file.hpp"
#include "engine/input/workload.hpp"

namespace engine {
namespace {

using testing::HasSubstr;
namespace fs = std::filesystem;

// `text` written as `name` in a fresh directory; returns its path.
std::string log_file(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / ("meshinfer-trace-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / name) << text;
  return (dir / name).string();
}

void expect_refused(const std::string& file, const std::string& where, const std::string& phrase) {
  try {
    read_request_trace(file);
    ADD_FAILURE() << "accepted " << file;
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), file);
    EXPECT_EQ(e.json_path(), where) << e.what();
    EXPECT_THAT(e.reason(), HasSubstr(phrase));
  }
}

TEST(RequestTrace, AzureTimestampsCountFromTheFirstRow) {
  const auto r = read_request_trace(log_file("azure.csv",
                                             "TIMESTAMP,ContextTokens,GeneratedTokens\r\n"
                                             "2023-11-16 18:15:46.6805900,374,44\r\n"
                                             "2023-11-16 18:15:50.0000000,396,109\r\n"
                                             "2023-11-17 00:00:01.5,8,2\r\n"));
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].arrival_s, 0);
  EXPECT_NEAR(r[1].arrival_s, 3.31941, 1e-9);
  EXPECT_NEAR(r[2].arrival_s, 5 * 3600 + 44 * 60 + 14.81941, 1e-6);  // past midnight
  EXPECT_EQ(r[1].prompt_tokens, 396);
  EXPECT_EQ(r[1].output_tokens, 109);
  EXPECT_EQ(r[2].id, 2);
}

TEST(RequestTrace, DatesKeepTheirTenthsOfAMicrosecondAndNegativeSecondsOrderCorrectly) {
  // A date is 1.7e9 s since 1970: in one double it would keep only a quarter of a microsecond.
  const auto r = read_request_trace(log_file("tenths.csv",
                                             "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                             "2023-11-16 18:15:46.6805900,1,1\n"
                                             "2023-11-16 18:15:46.6805901Z,2,2\n"));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_NEAR(r[1].arrival_s, 1e-7, 1e-12);
  const auto n = read_request_trace(log_file("neg.csv",
                                             "arrival_s,prompt_tokens,output_tokens\n"
                                             "-0.25,1,1\n-1.5,2,2\n1e1,3,3\n1.25e1,4,4\n"));
  ASSERT_EQ(n.size(), 4u);
  EXPECT_EQ(n[0].prompt_tokens, 2);
  EXPECT_EQ(n[1].arrival_s, 1.25);
  EXPECT_EQ(n[2].arrival_s, 11.5);
  EXPECT_EQ(n[3].arrival_s, 14);  // 12.5, not 1 + 0.25e1
}

TEST(RequestTrace, BurstGptColumnsAmongOthersAndQuotedFields) {
  const auto r = read_request_trace(log_file("burst.csv",
                                             "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                                             "5,ChatGPT,472,18,490,Conversation log\n"
                                             "45,\"GPT-4, large\",1087,257,1344,Conversation log\n"));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1].arrival_s, 40);
  EXPECT_EQ(r[1].prompt_tokens, 1087);
  EXPECT_EQ(r[1].output_tokens, 257);
}

TEST(RequestTrace, JsonLinesWithTimeScaleAndWindow) {
  const std::string file = log_file("log.jsonl",
                                    "{\"arrival_s\": 10, \"prompt_tokens\": 100, \"output_tokens\": 5}\n"
                                    "\n"
                                    "{\"arrival_s\": 12.5, \"prompt_tokens\": 200, \"output_tokens\": 6}\n"
                                    "{\"arrival_s\": 11, \"prompt_tokens\": 300, \"output_tokens\": 7}\n"
                                    "{\"arrival_s\": 20, \"prompt_tokens\": 400, \"output_tokens\": 8}\n");
  // Seconds 1 to 3 of the log (10 is its start), replayed twice as fast; out of order rows are sorted.
  const auto r = read_request_trace(file, 0.5, std::pair{1.0, 3.0});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].prompt_tokens, 300);
  EXPECT_EQ(r[0].arrival_s, 0);
  EXPECT_EQ(r[1].prompt_tokens, 200);
  EXPECT_EQ(r[1].arrival_s, 0.75);
}

TEST(RequestTrace, BadRowsAreRefusedWithFileLineAndReason) {
  expect_refused(log_file("a.csv",
                          "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,374,44\n"
                          "2023-11-16 18:15:47,many,44\n"),
                 "line 3", "ContextTokens 'many' is not a whole number of tokens");
  expect_refused(log_file("b.csv", "Timestamp,Request tokens,Response tokens\n1,10,0\n"), "line 2",
                 "Response tokens is 0; a request needs at least 1 token");
  expect_refused(log_file("c.csv", "Timestamp,Request tokens,Response tokens\n1,10\n"), "line 2",
                 "has 2 fields, the header has 3");
  expect_refused(log_file("d.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n16/11/2023 18:15,1,1\n"), "line 2",
                 "TIMESTAMP '16/11/2023 18:15' is not a time like 2023-11-16 18:15:46.68");
  expect_refused(log_file("e.jsonl", "{\"arrival_s\": 1, \"prompt_tokens\": 2, \"output_tokens\": 3}\n[1]\n"), "line 2",
                 "is not a JSON object");
  expect_refused(log_file("g.csv", "arrival_s,prompt_tokens,output_tokens\n0x10,1,1\n"), "line 2",
                 "arrival_s '0x10' is not a number of seconds");
  expect_refused(log_file("f.csv", "time,in,out\n1,2,3\n"), "line 1",
                 "no known column layout in time, in, out; known: meshinfer (arrival_s");
  try {
    read_request_trace(log_file("h.csv", "arrival_s,prompt_tokens,output_tokens\n1,2,3\n"), 1, std::pair{5.0, 9.0});
    ADD_FAILURE() << "an empty window was accepted";
  } catch (const InputError& e) {
    EXPECT_THAT(e.reason(), HasSubstr("no request arrives in the window [5, 9) s"));
  }
}

TEST(RequestTrace, AScenarioReplaysTheShippedSampleRelativeToItsFile) {
  const std::string dir = fs::path(log_file("x", "")).parent_path().string();
  fs::copy_file(fs::path(MESHINFER_SOURCE_DIR) / "scenarios/traces/sample-azure.csv", dir + "/sample.csv",
                fs::copy_options::overwrite_existing);
  const std::string text = R"({
    "cluster": {"nodes": [{"name": "m1", "hardware": "m3-ultra-512gb"}, {"name": "m2", "hardware": "m3-ultra-512gb"}]},
    "model": {"name": "qwen3-235b-a22b", "quant": "8bit"},
    "workload": {"trace": "sample.csv", "time_scale": 2, "window_s": [10, 20]}})";
  const Scenario s = parse_scenario(text, dir + "/replay.json", Catalog::builtin());
  EXPECT_EQ(s.workload.arrival, "trace");
  const auto requests = make_requests(s.workload, 1);
  ASSERT_EQ(static_cast<int>(requests.size()), s.workload.requests);
  EXPECT_GT(requests.size(), 10u);
  EXPECT_LT(requests.back().arrival_s, 20.0);  // ten seconds of log, at half speed
  EXPECT_EQ(requests, make_requests(s.workload, 99)) << "a log replays the same whatever the seed";
}

TEST(RequestTrace, AScenarioCannotAlsoDrawWhatItsLogGives) {
  const std::string text = R"({
    "cluster": {"nodes": [{"name": "m1", "hardware": "m3-ultra-512gb"}, {"name": "m2", "hardware": "m3-ultra-512gb"}]},
    "model": {"name": "qwen3-235b-a22b", "quant": "8bit"},
    "workload": {"trace": "sample.csv", "requests": 4}})";
  try {
    parse_scenario(text, "replay.json", Catalog::builtin());
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_EQ(e.json_path(), "/workload/requests");
    EXPECT_THAT(e.reason(), HasSubstr("a trace workload takes this from its log"));
  }
}

}  // namespace
}  // namespace engine
