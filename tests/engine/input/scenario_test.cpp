// Scenario files: the shipped ones load, full meshes are generated, and each
// kind of bad input is refused with the file, the JSON path and the reason.
#include "engine/input/scenario.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "engine/base/error.hpp"
#include "engine/input/scenario_file.hpp"

namespace engine {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::HasSubstr;

const fs::path kScenarios = fs::path(MESHINFER_SOURCE_DIR) / "scenarios";

const Catalog& cat() { return Catalog::builtin(); }

// A valid two-node scenario; each refusal below merges one change into it
// (RFC 7386: objects merge, arrays are replaced, null deletes a key).
std::string with(const std::string& patch) {
  json doc = json::parse(R"({
    "cluster": {"nodes": [{"name": "m1", "hardware": "m3-ultra-512gb"},
                          {"name": "m2", "hardware": "m3-ultra-512gb"}]},
    "model": {"name": "qwen3-235b-a22b", "quant": "8bit"},
    "parallelism": "tensor"
  })");
  doc.merge_patch(json::parse(patch));
  return doc.dump(2);
}

// `n` nodes named m1..mn of one hardware card, as a JSON array.
std::string nodes(int n, const std::string& hardware = "m3-ultra-512gb") {
  json out = json::array();
  for (int i = 1; i <= n; ++i) out.push_back({{"name", "m" + std::to_string(i)}, {"hardware", hardware}});
  return out.dump();
}

void expect_refused(const std::string& text, const std::string& path, const std::string& phrase) {
  try {
    parse_scenario(text, "bad.json", cat());
    ADD_FAILURE() << "accepted:\n" << text;
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "bad.json");
    EXPECT_EQ(e.json_path(), path) << e.what();
    EXPECT_THAT(e.reason(), HasSubstr(phrase));
  }
}

// --- Refusals --------------------------------------------------------------

TEST(ScenarioRefusal, MalformedJsonGivesLineAndColumn) {
  expect_refused("{\n  \"seed\": 1,\n  \"name\": ,\n}", "", "malformed JSON at line 3, column 11");
  expect_refused("", "", "line 1, column 1");
  expect_refused(R"({"seed": 1e400})", "", "malformed JSON: number overflow parsing '1e400'");
}

TEST(ScenarioRefusal, MissingField) {
  expect_refused(with(R"({"model": {"quant": null}})"), "/model/quant", "missing required key 'quant'");
  expect_refused(with(R"({"cluster": null})"), "/cluster", "missing required key 'cluster'");
}

TEST(ScenarioRefusal, MistypedField) {
  expect_refused(with(R"({"workload": {"requests": "8"}})"), "/workload/requests", "must be an integer, got \"8\"");
  expect_refused(with(R"({"workload": {"requests": 1.5}})"), "/workload/requests", "must be an integer");
  expect_refused(with(R"({"model": "qwen3-235b-a22b"})"), "/model", "must be an object");
  expect_refused(with(R"({"seed": -1})"), "/seed", "must be an integer from 0 to");
}

TEST(ScenarioRefusal, UnknownKeyCatchesTypos) {
  expect_refused(with(R"({"workload": {"arrival": {"concurency": 2}}})"), "/workload/arrival/concurency",
                 "unknown key 'concurency' (did you mean 'concurrency'?)");
  expect_refused(with(R"({"deadline": 10})"), "/deadline", "did you mean 'deadline_s'?");
}

TEST(ScenarioRefusal, UnknownModelListsKnownOnes) {
  expect_refused(with(R"({"model": {"name": "qwen3-235b"}})"), "/model/name", "unknown model 'qwen3-235b'");
  expect_refused(with(R"({"model": {"name": "qwen3-235b"}})"), "/model/name", "qwen3-235b-a22b");
}

TEST(ScenarioRefusal, UnknownQuantListsTheModelsOnes) {
  expect_refused(with(R"({"model": {"quant": "3bit"}})"), "/model/quant",
                 "unknown quantization of qwen3-235b-a22b '3bit'");
  expect_refused(with(R"({"model": {"quant": "3bit"}})"), "/model/quant", "8bit");
}

TEST(ScenarioRefusal, UnknownHardware) {
  expect_refused(with(R"({"cluster": {"nodes": [{"name": "a", "hardware": "m3-ultra-512gb"},
                                               {"name": "b", "hardware": "m3-ultra-512gb"},
                                               {"name": "c", "hardware": "m3-ultra-1tb"}]}})"),
                 "/cluster/nodes/2/hardware", "unknown hardware 'm3-ultra-1tb'");
}

// A rank's compute threads: a count of at least one, and not absurdly many.
TEST(ScenarioRefusal, NodeThreadsOutOfRange) {
  const std::string two = R"([{"name": "m1", "hardware": "m3-ultra-512gb"}, {"name": "m2", "hardware": "m3-ultra-512gb", )";
  expect_refused(with(R"({"cluster": {"nodes": )" + two + R"("threads": 0}]}})"), "/cluster/nodes/1/threads",
                 "must be >= 1, got 0");
  expect_refused(with(R"({"cluster": {"nodes": )" + two + R"("threads": 5000}]}})"), "/cluster/nodes/1/threads",
                 "at most 1024 threads");
  expect_refused(with(R"({"cluster": {"nodes": )" + two + R"("threads": "4"}]}})"), "/cluster/nodes/1/threads",
                 "must be an integer");
  const Scenario s = parse_scenario(with(R"({"cluster": {"nodes": )" + two + R"("threads": 3}]}})"), "ok.json", cat());
  EXPECT_EQ(s.nodes[0].threads, 0);  // the host's share, worked out where the rank runs
  EXPECT_EQ(s.nodes[1].threads, 3);
}

TEST(ScenarioRefusal, UnknownLink) {
  expect_refused(with(R"({"cluster": {"fabric": {"link": "tb6-rdma"}}})"), "/cluster/fabric/link",
                 "unknown link 'tb6-rdma' (did you mean 'tb5-rdma'?)");
}

TEST(ScenarioRefusal, DuplicateNodeNames) {
  expect_refused(with(R"({"cluster": {"nodes": [{"name": "m1", "hardware": "m3-ultra-512gb"},
                                               {"name": "m1", "hardware": "m3-ultra-256gb"}]}})"),
                 "/cluster/nodes/1/name", "duplicate node name 'm1' (also /cluster/nodes/0)");
}

TEST(ScenarioRefusal, NodeNameMustBePlain) {
  expect_refused(with(R"({"cluster": {"nodes": [{"name": "m:1", "hardware": "m3-ultra-512gb"}]}})"),
                 "/cluster/nodes/0/name", "letters, digits");
}

TEST(ScenarioRefusal, FullMeshNeedsMorePortsThanAMachineHas) {
  // Seven M3 Ultras in a full mesh need 6 Thunderbolt ports each; 5 are usable.
  expect_refused(with(R"({"cluster": {"nodes": )" + nodes(7) + "}}"), "/cluster/fabric",
                 "m1 needs 6 thunderbolt port(s) for its cables, but m3-ultra-512gb has 5 usable");
}

TEST(ScenarioRefusal, CablesNeedMorePortsThanAMachineHas) {
  expect_refused(with(R"({"cluster": {"nodes": )" + nodes(4, "dgx-spark") + R"(, "fabric": {
                   "type": "cables", "link": "qsfp200-roce", "cables": [
                     {"a": "m1:1", "b": "m2:1"}, {"a": "m1:2", "b": "m3:1"}, {"a": "m1:3", "b": "m4:1"}]}}})"),
                 "/cluster/fabric/cables/2/a", "m1 needs 3 qsfp port(s) for its cables, but dgx-spark has 2 usable");
}

TEST(ScenarioRefusal, CableToUnknownNode) {
  expect_refused(with(R"({"cluster": {"fabric": {"type": "cables", "cables": [{"a": "m1:1", "b": "m9:1"}]}}})"),
                 "/cluster/fabric/cables/0/b", "unknown node 'm9'");
}

TEST(ScenarioRefusal, PortUsedTwice) {
  expect_refused(with(R"({"cluster": {"nodes": )" + nodes(3) + R"(, "fabric": {"type": "cables", "cables": [
                   {"a": "m1:1", "b": "m2:1"}, {"a": "m1:1", "b": "m3:1"}]}}})"),
                 "/cluster/fabric/cables/1/a", "port m1:1 is already used by the cable at /cluster/fabric/cables/0/a");
}

TEST(ScenarioRefusal, PortBeyondTheMachinesPorts) {
  expect_refused(with(R"({"cluster": {"fabric": {"type": "cables", "cables": [{"a": "m1:6", "b": "m2:1"}]}}})"),
                 "/cluster/fabric/cables/0/a", "m1 has no thunderbolt port 6: m3-ultra-512gb has ports 1 to 5");
}

TEST(ScenarioRefusal, CableEndsNeedPortsExceptOnSwitchedLinks) {
  expect_refused(with(R"({"cluster": {"fabric": {"type": "cables", "cables": [{"a": "m1", "b": "m2:1"}]}}})"),
                 "/cluster/fabric/cables/0/a", "needs a port, as in \"m1:1\"");
  expect_refused(with(R"({"cluster": {"fabric": {"type": "cables", "cables": [
                   {"a": "m1:1", "b": "m2:1", "link": "10gbe"}]}}})"),
                 "/cluster/fabric/cables/0/a", "10gbe is switched and takes no port");
}

TEST(ScenarioRefusal, CableFromANodeToItself) {
  expect_refused(with(R"({"cluster": {"fabric": {"type": "cables", "cables": [{"a": "m1:1", "b": "m1:2"}]}}})"),
                 "/cluster/fabric/cables/0/b", "two different nodes");
}

TEST(ScenarioRefusal, DisconnectedCluster) {
  expect_refused(with(R"({"cluster": {"nodes": )" + nodes(3) + R"(, "fabric": {"type": "cables", "cables": [
                   {"a": "m1:1", "b": "m2:1"}]}}})"),
                 "/cluster/fabric/cables", "m3 is not connected to m1");
}

TEST(ScenarioRefusal, TensorDegreeMustDivideHeads) {
  expect_refused(with(R"({"cluster": {"nodes": )" + nodes(3) + "}}"), "/parallelism",
                 "tensor parallel over all 3 nodes needs the attention heads (64) and KV heads (4) of "
                 "qwen3-235b-a22b to divide by 3; use \"tensor-uneven\", or 1, 2, 4 nodes");
}

TEST(ScenarioRefusal, ExpertParallelNeedsMoe) {
  expect_refused(with(R"({"model": {"name": "llama-3.3-70b"}, "parallelism": "expert"})"), "/parallelism",
                 "llama-3.3-70b is dense");
}

TEST(ScenarioRefusal, ModelDoesNotFit) {
  expect_refused(with(R"({"cluster": {"nodes": [{"name": "m1", "hardware": "m3-ultra-256gb"}]}})"), "/model",
                 "GB short");
}

TEST(ScenarioRefusal, UnknownExpectationMetric) {
  expect_refused(with(R"({"expect": {"decode_tps": {"min": 20}}})"), "/expect/decode_tps",
                 "unknown metric 'decode_tps'; known: decode_tokens_per_s, prefill_tokens_per_s, ttft_p50_s");
}

TEST(ScenarioRefusal, AvailabilityIsRefusedNamingWhatReplacedIt) {
  expect_refused(with(R"({"expect": {"availability": {"min": 0.9}}})"), "/expect/availability",
                 "say \"uptime\" (the fraction of the run the cluster could serve) or \"request_success\"");
}

TEST(ScenarioRefusal, ExpectationNeedsASatisfiableBound) {
  expect_refused(with(R"({"expect": {"ttft_p99_s": {}}})"), "/expect/ttft_p99_s", "needs a bound");
  expect_refused(with(R"({"expect": {"ttft_p99_s": {"min": 2, "max": 1}}})"), "/expect/ttft_p99_s",
                 "min (2) is above max (1)");
  expect_refused(with(R"({"expect": {"ttft_p99_s": {"below": 1}}})"), "/expect/ttft_p99_s/below",
                 "unknown key 'below'");
}

TEST(ScenarioRefusal, BadFaultKind) {
  expect_refused(with(R"({"faults": [{"at_s": 1, "kind": "link-break", "target": "m1-m2"}]})"), "/faults/0/kind",
                 "unknown fault kind 'link-break'; known: link-down");
}

TEST(ScenarioRefusal, BadFaultTarget) {
  expect_refused(with(R"({"faults": [{"at_s": 1, "kind": "link-down", "target": "m1-m9"}]})"), "/faults/0/target",
                 "unknown link target 'm1-m9': write \"a-b\" with two node names (nodes: m1, m2)");
  expect_refused(with(R"({"faults": [{"at_s": 1, "kind": "node-crash", "target": "m3"}]})"), "/faults/0/target",
                 "unknown node 'm3'");
  expect_refused(with(R"({"faults": [{"at_s": 1, "kind": "rdma-stack-failure", "target": "m1"}]})"), "/faults/0/target",
                 "unknown key 'target'");
}

TEST(ScenarioRefusal, PacketLossNeedsARateThatIsAProbability) {
  expect_refused(with(R"({"faults": [{"at_s": 1, "kind": "rdma-packet-loss"}]})"), "/faults/0",
                 "rdma-packet-loss needs loss > 0 or reorder > 0");
  expect_refused(with(R"({"faults": [{"at_s": 1, "kind": "rdma-packet-loss", "loss": 1.5}]})"), "/faults/0/loss",
                 "must be a probability, at most 1, got 1.5");
  expect_refused(with(R"({"faults": [{"at_s": 1, "kind": "rdma-packet-loss", "reorder": -0.1}]})"), "/faults/0/reorder",
                 "must be");
  expect_refused(with(R"({"faults": [{"at_s": 1, "kind": "rdma-packet-loss", "loss": 0.1, "target": "m1-m3"}]})"),
                 "/faults/0/target", "unknown link target 'm1-m3'");
  expect_refused(with(R"({"faults": [{"at_s": 1, "kind": "rdma-packet-loss", "loss": 0.1, "factor": 0.5}]})"),
                 "/faults/0/factor", "unknown key 'factor'");
}

// On one cable or, without a target, on every RDMA cable; written back as read.
TEST(Scenario, PacketLossReadsItsCableAndRatesAndWritesThemBack) {
  const Scenario s = parse_scenario(with(R"({"faults": [
      {"at_s": 1, "kind": "rdma-packet-loss", "target": "m1-m2", "loss": 0.01, "duration_s": 2},
      {"at_s": 2, "kind": "rdma-packet-loss", "reorder": 0.5}]})"),
                                    "loss.json", cat());
  ASSERT_EQ(s.faults.size(), 2u);
  EXPECT_EQ(s.faults[0].node, 0);
  EXPECT_EQ(s.faults[0].peer, 1);
  EXPECT_DOUBLE_EQ(s.faults[0].loss, 0.01);
  EXPECT_DOUBLE_EQ(s.faults[0].reorder, 0);
  EXPECT_EQ(s.faults[1].node, -1);
  EXPECT_EQ(fault_json(s.faults[0]).dump(),
            R"({"at_s":1.0,"kind":"rdma-packet-loss","target":"m1-m2","duration_s":2.0,"loss":0.01})");
  EXPECT_EQ(fault_json(s.faults[1]).dump(), R"({"at_s":2.0,"kind":"rdma-packet-loss","reorder":0.5})");
}

// Whether IP over the Thunderbolt ports outlives the RDMA stack is the
// scenario's choice, on that fault only; it survives a round trip through
// fault_json (a chaos schedule replayed), and says nothing when false.
TEST(Scenario, AnRdmaStackFailureSaysWhetherIpSurvivesIt) {
  const Scenario s = parse_scenario(with(R"({"faults": [
      {"at_s": 1, "kind": "rdma-stack-failure", "ip_survives": true},
      {"at_s": 2, "kind": "rdma-stack-failure"}]})"),
                                    "ip.json", cat());
  ASSERT_EQ(s.faults.size(), 2u);
  EXPECT_TRUE(s.faults[0].ip_survives);
  EXPECT_FALSE(s.faults[1].ip_survives);  // the default: the cables go dark with the stack
  EXPECT_EQ(fault_json(s.faults[0]).dump(), R"({"at_s":1.0,"kind":"rdma-stack-failure","ip_survives":true})");
  EXPECT_EQ(fault_json(s.faults[1]).dump(), R"({"at_s":2.0,"kind":"rdma-stack-failure"})");
}

TEST(ScenarioRefusal, IpSurvivesIsAnRdmaStackFailuresBoolean) {
  expect_refused(with(R"({"faults": [{"at_s": 1, "kind": "rdma-stack-failure", "ip_survives": "yes"}]})"),
                 "/faults/0/ip_survives", "must be true or false, got");
  expect_refused(with(R"({"faults": [{"at_s": 1, "kind": "rdma-stack-failure", "ip_survive": true}]})"),
                 "/faults/0/ip_survive", "unknown key 'ip_survive' (did you mean 'ip_survives'?)");
  expect_refused(with(R"({"faults": [{"at_s": 1, "kind": "link-down", "target": "m1-m2", "ip_survives": true}]})"),
                 "/faults/0/ip_survives", "unknown key 'ip_survives'");
}

TEST(ScenarioRefusal, LinkFaultNeedsACable) {
  expect_refused(with(R"({"cluster": {"nodes": )" + nodes(3) + R"(, "fabric": {"type": "cables", "cables": [
                   {"a": "m1:1", "b": "m2:1"}, {"a": "m2:2", "b": "m3:1"}]}},
                   "parallelism": "pipeline", "faults": [{"at_s": 1, "kind": "link-down", "target": "m1-m3"}]})"),
                 "/faults/0/target", "no cable joins m1 and m3");
}

TEST(ScenarioRefusal, FaultKeysDependOnTheKind) {
  expect_refused(with(R"({"faults": [{"at_s": 1, "kind": "link-down", "target": "m1-m2", "factor": 0.5}]})"),
                 "/faults/0/factor", "unknown key 'factor'");
  expect_refused(with(R"({"faults": [{"at_s": 1, "kind": "node-slow", "target": "m1"}]})"), "/faults/0/factor",
                 "missing required key 'factor'");
  expect_refused(with(R"({"faults": [{"at_s": 1, "kind": "node-slow", "target": "m1", "factor": 2}]})"),
                 "/faults/0/factor", "at most 1");
  expect_refused(with(R"({"faults": [{"at_s": 1, "kind": "link-degrade", "target": "m1-m2"}]})"), "/faults/0",
                 "needs factor < 1 or added_latency_s > 0");
  expect_refused(with(R"({"faults": [{"at_s": 1, "kind": "link-flap", "target": "m1-m2", "period_s": 1,
                   "duty": 1}]})"),
                 "/faults/0/duty", "below 1");
}

TEST(ScenarioRefusal, FaultAfterTheDeadline) {
  expect_refused(with(R"({"deadline_s": 60, "faults": [{"at_s": 60, "kind": "node-crash", "target": "m1"}]})"),
                 "/faults/0/at_s", "after the deadline (60 s)");
}

TEST(ScenarioRefusal, NonPositiveNumbers) {
  expect_refused(with(R"({"deadline_s": 0})"), "/deadline_s", "must be > 0, got 0");
  expect_refused(with(R"({"workload": {"requests": 0}})"), "/workload/requests", "must be >= 1, got 0");
  expect_refused(with(R"({"workload": {"arrival": {"type": "poisson", "rate_per_s": -0.5}}})"),
                 "/workload/arrival/rate_per_s", "must be > 0, got -0.5");
  expect_refused(with(R"({"workload": {"prompt_tokens": {"dist": "normal", "mean": 512, "stddev": -1, "max": 9}}})"),
                 "/workload/prompt_tokens/stddev", "must be >= 0");
  expect_refused(with(R"({"recovery": {"heartbeat_s": 0}})"), "/recovery/heartbeat_s", "must be > 0");
  expect_refused(with(R"({"faults": [{"at_s": -1, "kind": "node-crash", "target": "m1"}]})"), "/faults/0/at_s",
                 "must be >= 0");
}

TEST(ScenarioRefusal, ConcurrencyBelowOne) {
  expect_refused(with(R"({"workload": {"arrival": {"type": "closed", "concurrency": 0}}})"),
                 "/workload/arrival/concurrency", "must be >= 1, got 0");
}

TEST(ScenarioRefusal, DistributionBounds) {
  expect_refused(with(R"({"workload": {"output_tokens": {"dist": "uniform", "min": 64, "max": 32}}})"),
                 "/workload/output_tokens/max", "max (32) is below min (64)");
  expect_refused(with(R"({"workload": {"output_tokens": {"dist": "gamma", "max": 32}}})"),
                 "/workload/output_tokens/dist", "unknown distribution 'gamma'");
}

TEST(ScenarioRefusal, RecoverySettings) {
  expect_refused(with(R"({"recovery": {"heartbeat_s": 0.5, "heartbeat_timeout_s": 0.25}})"),
                 "/recovery/heartbeat_timeout_s", "must exceed heartbeat_s (0.5 s)");
  expect_refused(with(R"({"recovery": {"policy": "fallback"}})"), "/recovery/policy",
                 "needs /cluster/fabric/secondary_link");
  expect_refused(with(R"({"recovery": {"policy": "retry"}})"), "/recovery/policy", "unknown recovery policy 'retry'");
}

TEST(Scenario, IsSimulatedAtTheFlowLevelUnlessItAsksForMessages) {
  EXPECT_EQ(parse_scenario(with("{}"), "ok.json", cat()).level, SimulationLevel::kFlow);
  EXPECT_EQ(parse_scenario(with(R"({"simulation_level": "message"})"), "ok.json", cat()).level,
            SimulationLevel::kMessage);
}

TEST(Scenario, AnExpectationMaySayItsMetricMayBeAbsent) {
  const Scenario s = parse_scenario(with(R"({"expect": {"recovery_s": {"max": 30, "may_be_absent": true},
                                                       "failed_requests": {"eq": 0}}})"),
                                    "ok.json", cat());
  ASSERT_EQ(s.expectations.size(), 2u);
  for (const Expectation& e : s.expectations) EXPECT_EQ(e.may_be_absent, e.metric == "recovery_s") << e.metric;
  expect_refused(with(R"({"expect": {"recovery_s": {"max": 30, "may_be_absent": "yes"}}})"),
                 "/expect/recovery_s/may_be_absent", "must be true or false");
}

TEST(ScenarioRefusal, SimulationLevelIsMessageOrFlow) {
  expect_refused(with(R"({"simulation_level": "packet"})"), "/simulation_level",
                 "unknown simulation level 'packet'; known: message, flow");
  expect_refused(with(R"({"simulation_level": 1})"), "/simulation_level", "must be a string");
}

TEST(ScenarioRefusal, NamesOutsideAnOwnCatalog) {
  // A catalog of one's own: no tb5-rdma (the default link), one profile card.
  const fs::path dir = fs::temp_directory_path() / ("scenario_test_catalog_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::copy(fs::path(MESHINFER_SOURCE_DIR) / "scenarios" / "catalog", dir, fs::copy_options::recursive);
  fs::remove(dir / "links" / "tb5-rdma.json");
  fs::remove_all(dir / "profiles");
  fs::create_directory(dir / "profiles");
  std::ofstream(dir / "profiles" / "meshinfer.json") << "{}";
  const Catalog own = Catalog::load(dir.string());
  auto refusal = [&](const std::string& text) {
    try {
      parse_scenario(text, "own.json", own);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refusal(with("{}")),
            "own.json: /cluster/fabric/link: unknown default link 'tb5-rdma'; "
            "known: 10gbe, 2.5gbe, qsfp200-roce, tb5-tcp");
  // Profiles are listed from the catalog's profiles/ folder when the scenario is read.
  EXPECT_EQ(refusal(with(R"({"cluster": {"fabric": {"link": "tb5-tcp"}}, "profile": "exo"})")),
            "own.json: /profile: unknown profile 'exo'; known: meshinfer");
  fs::remove_all(dir);
}

TEST(ScenarioRefusal, ErrorMessageNamesFileAndPath) {
  try {
    parse_scenario(with(R"({"deadline_s": 0})"), "x/bad.json", cat());
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "x/bad.json: /deadline_s: must be > 0, got 0");
  }
  try {
    load_scenario("/nonexistent/scenario.json", cat());
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "/nonexistent/scenario.json");
    EXPECT_THAT(e.reason(), HasSubstr("cannot open"));
  }
}

// --- Accepted input --------------------------------------------------------

TEST(Scenario, DefaultScenarioLoads) {
  Scenario s = load_scenario((kScenarios / "default.json").string(), cat());
  EXPECT_EQ(s.name, "qwen3-235b-8bit-4node-rdma");
  ASSERT_EQ(s.nodes.size(), 4u);
  EXPECT_EQ(s.nodes[2].hardware, "m3-ultra-256gb");
  EXPECT_EQ(s.fabric.type, engine::FabricType::kFullMesh);
  EXPECT_EQ(s.fabric.cables.size(), 6u);
  EXPECT_EQ(s.fabric.secondary_link, "10gbe");
  EXPECT_EQ(s.model, "qwen3-235b-a22b");
  EXPECT_EQ(s.quant, "8bit");
  EXPECT_EQ(s.parallelism, engine::Strategy::kTensor);
  EXPECT_EQ(s.workload.requests, 8);
  EXPECT_EQ(s.workload.prompt_tokens.value, 512);
  EXPECT_EQ(s.workload.output_tokens.value, 128);
  EXPECT_EQ(s.workload.arrival, "closed");
  EXPECT_EQ(s.workload.concurrency, 1);
}

TEST(Scenario, ScalingSetLoads) {
  EXPECT_EQ(load_scenario((kScenarios / "qwen3-235b-8bit-1node.json").string(), cat()).nodes.size(), 1u);
  Scenario two = load_scenario((kScenarios / "qwen3-235b-8bit-2node.json").string(), cat());
  ASSERT_EQ(two.fabric.cables.size(), 1u);
  EXPECT_EQ(two.fabric.cables[0].port_a, 1);
  EXPECT_EQ(two.fabric.cables[0].port_b, 1);
}

TEST(Scenario, EveryShippedScenarioLoads) {
  int loaded = 0;
  const fs::path fuzz_seeds = fs::path(MESHINFER_SOURCE_DIR) / "tests" / "fuzz" / "seeds";
  for (const auto& dir : {kScenarios, kScenarios / "ci", fuzz_seeds}) {
    if (!fs::exists(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      const fs::path& p = entry.path();
      if (p.extension() != ".json" || p.filename() == "scenario.schema.json") continue;
      SCOPED_TRACE(p.string());
      EXPECT_NO_THROW(load_scenario(p.string(), cat()));
      ++loaded;
    }
  }
  EXPECT_GE(loaded, 4);
}

TEST(Scenario, FullMeshCablesEveryPairOncePortsNumberedPerNode) {
  for (int n = 1; n <= 6; ++n) {
    SCOPED_TRACE(n);
    Scenario s = parse_scenario(with(R"({"cluster": {"nodes": )" + nodes(n) + R"(},
                                        "model": {"name": "llama-3.1-8b", "quant": "bf16"},
                                        "parallelism": "pipeline"})"),
                                "mesh.json", cat());
    ASSERT_EQ(s.fabric.cables.size(), size_t(n * (n - 1) / 2));
    std::set<std::pair<int, int>> pairs;
    std::vector<std::set<int>> ports(n);
    for (const Cable& c : s.fabric.cables) {
      EXPECT_LT(c.a, c.b);
      EXPECT_EQ(c.link, "tb5-rdma");
      pairs.insert({c.a, c.b});
      ports[c.a].insert(c.port_a);
      ports[c.b].insert(c.port_b);
    }
    EXPECT_EQ(pairs.size(), s.fabric.cables.size());
    for (const auto& used : ports) {
      ASSERT_EQ(used.size(), size_t(n - 1));  // distinct
      if (n > 1) {
        EXPECT_EQ(*used.rbegin(), n - 1);  // 1..n-1
      }
    }
  }
}

TEST(Scenario, SwitchedFullMeshTakesNoPorts) {
  Scenario s = parse_scenario(with(R"({"cluster": {"nodes": )" + nodes(8) + R"(, "fabric": {"link": "10gbe"}},
                                      "parallelism": "pipeline"})"),
                              "switched.json", cat());
  EXPECT_EQ(s.fabric.cables.size(), 28u);
  for (const Cable& c : s.fabric.cables) EXPECT_EQ(c.port_a + c.port_b, 0);
}

TEST(Scenario, DefaultsFillOptionalFields) {
  Scenario s = parse_scenario(with(R"({"parallelism": null})"), "dir/minimal.json", cat());
  EXPECT_EQ(s.file, "dir/minimal.json");
  EXPECT_EQ(s.name, "minimal");
  EXPECT_EQ(s.seed, 1u);
  EXPECT_EQ(s.fabric.type, engine::FabricType::kFullMesh);
  EXPECT_EQ(s.fabric.link, "tb5-rdma");
  EXPECT_FALSE(s.fabric.secondary_link);
  EXPECT_FALSE(s.parallelism);
  EXPECT_EQ(s.profile, "meshinfer");
  EXPECT_EQ(s.workload.requests, 1);
  EXPECT_EQ(s.workload.prompt_tokens.kind, "fixed");
  EXPECT_EQ(s.workload.prompt_tokens.value, 512);
  EXPECT_EQ(s.workload.output_tokens.value, 128);
  EXPECT_EQ(s.workload.arrival, "closed");
  EXPECT_EQ(s.workload.concurrency, 1);
  EXPECT_EQ(s.workload.prefill_chunk, 512);
  EXPECT_EQ(s.workload.max_batch, 16);
  EXPECT_TRUE(s.faults.empty());
  EXPECT_EQ(s.recovery, engine::RecoveryPolicy::kFailStop);
  EXPECT_DOUBLE_EQ(s.heartbeat_s, 0.05);
  EXPECT_DOUBLE_EQ(s.heartbeat_timeout_s, 0.25);
  EXPECT_DOUBLE_EQ(s.deadline_s, 3600);
  EXPECT_TRUE(s.expectations.empty());
}

TEST(Scenario, ReadsEverySection) {
  Scenario s = parse_scenario(with(R"({
    "seed": 42,
    "cluster": {"nodes": [{"name": "mac-1", "hardware": "m3-ultra-512gb"},
                          {"name": "mac-2", "hardware": "m3-ultra-512gb"},
                          {"name": "mac-3", "hardware": "m3-ultra-512gb"}],
                "fabric": {"type": "cables", "link": "tb5-rdma", "secondary_link": "10gbe", "cables": [
                  {"a": "mac-1:2", "b": "mac-2:5"}, {"a": "mac-2:1", "b": "mac-3:1", "link": "tb5-tcp"},
                  {"a": "mac-1", "b": "mac-3", "link": "10gbe"}]}},
    "parallelism": "pipeline",
    "workload": {"requests": 4.0,
                 "prompt_tokens": {"dist": "lognormal", "mean": 800, "stddev": 300, "min": 16, "max": 4096},
                 "output_tokens": {"dist": "uniform", "min": 32, "max": 256},
                 "arrival": {"type": "poisson", "rate_per_s": 0.5}},
    "faults": [{"at_s": 5, "kind": "link-flap", "target": "mac-1-mac-2", "period_s": 2, "duty": 0.25},
               {"at_s": 6, "kind": "link-degrade", "target": "mac-2-mac-3", "factor": 0.5},
               {"at_s": 7, "kind": "node-crash", "target": "mac-3", "duration_s": 30},
               {"at_s": 8, "kind": "rdma-stack-failure"}],
    "recovery": {"policy": "fallback", "heartbeat_s": 0.1, "heartbeat_timeout_s": 0.5},
    "expect": {"decode_tokens_per_s": {"min": 10, "max": 40}, "failed_requests": {"eq": 0}}
  })"),
                              "full.json", cat());
  EXPECT_EQ(s.seed, 42u);
  EXPECT_EQ(s.workload.requests, 4);  // 4.0 is an integer to JSON Schema too
  ASSERT_EQ(s.fabric.cables.size(), 3u);
  EXPECT_EQ(s.fabric.cables[0].port_a, 2);
  EXPECT_EQ(s.fabric.cables[0].port_b, 5);
  EXPECT_EQ(s.fabric.cables[1].link, "tb5-tcp");
  EXPECT_EQ(s.fabric.cables[2].port_a, 0);
  EXPECT_EQ(s.workload.prompt_tokens.kind, "lognormal");
  EXPECT_EQ(s.workload.prompt_tokens.mean, 800);
  EXPECT_EQ(s.workload.prompt_tokens.max, 4096);
  EXPECT_EQ(s.workload.output_tokens.min, 32);
  EXPECT_EQ(s.workload.arrival, "poisson");
  EXPECT_DOUBLE_EQ(s.workload.rate_per_s, 0.5);
  ASSERT_EQ(s.faults.size(), 4u);
  EXPECT_EQ(s.faults[0].target, "mac-1-mac-2");
  EXPECT_DOUBLE_EQ(s.faults[0].duty, 0.25);
  EXPECT_DOUBLE_EQ(s.faults[1].factor, 0.5);
  EXPECT_DOUBLE_EQ(s.faults[2].duration_s, 30);
  EXPECT_EQ(s.faults[3].target, "");
  EXPECT_EQ(s.recovery, engine::RecoveryPolicy::kFallback);
  ASSERT_EQ(s.expectations.size(), 3u);
  EXPECT_EQ(s.expectations[0].metric, "decode_tokens_per_s");
  EXPECT_EQ(s.expectations[0].op, "min");
  EXPECT_EQ(s.expectations[1].json_path, "/expect/decode_tokens_per_s/max");
  EXPECT_EQ(s.expectations[2].op, "eq");
}

// The schema is written by hand: its name lists must follow the loader's.
TEST(Scenario, SchemaListsTheLoadersNames) {
  std::ifstream in(kScenarios / "scenario.schema.json");
  json schema = json::parse(in);
  const json& defs = schema.at("$defs");
  auto names = [](const auto& list) { return json(std::vector<std::string>(list.begin(), list.end())); };
  EXPECT_EQ(schema.at("properties").at("parallelism").at("enum"), names(kParallelisms));
  EXPECT_EQ(defs.at("recovery").at("properties").at("policy").at("enum"), names(Names<RecoveryPolicy>::value));
  EXPECT_EQ(defs.at("fabric").at("properties").at("type").at("enum"), names(Names<FabricType>::value));
  EXPECT_EQ(schema.at("properties").at("simulation_level").at("enum"), names(Names<SimulationLevel>::value));
  std::vector<std::string> metrics;
  for (const auto& [metric, _] : defs.at("expect").at("properties").items()) metrics.push_back(metric);
  std::vector<std::string> loader(kMetrics.begin(), kMetrics.end());
  std::sort(loader.begin(), loader.end());
  EXPECT_EQ(metrics, loader);
  std::vector<std::string> kinds;
  for (const auto& branch : defs.at("fault").at("oneOf"))
    kinds.push_back(branch.at("properties").at("kind").at("const"));
  EXPECT_EQ(json(kinds), names(Names<FaultKind>::value));
}

}  // namespace
}  // namespace engine
