// meshinfer doctor on a netns mesh: each kind of setup mistake is planted on a
// healthy mesh and must be reported on the host, port or cable where it is,
// with exit status 1; the healthy mesh passes with 0.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "hw/netns_mesh.hpp"
#include "netns/softrdma_library.hpp"
#include "support/cli_runner.hpp"
#include "support/real_run.hpp"
#include "support/skip.hpp"

namespace {

using testing::HasSubstr;
using testing::Not;
using testsupport::run_shell;

class DoctorTest : public testing::Test {
 protected:
  void SetUp() override {
    const std::string why = hw::NetnsMesh::unavailable_reason();
    if (!why.empty()) SKIP_UNLESS_CI_PROVIDES(::geteuid() == 0, why);
    dir_ = testsupport::fresh_dir("doctor");
  }

  // Runs doctor on `mesh` (started in each namespace); `extra` options after the cluster file.
  testsupport::CliResult doctor(const hw::NetnsMesh& mesh, const std::string& extra = "",
                                const std::string& exec_prefix = "") {
    const std::string cluster = testsupport::write_json(dir_, "cluster", mesh.cluster(5000));
    return testsupport::run_cli("doctor --cluster " + cluster + " --exec-prefix '" +
                                (exec_prefix.empty() ? mesh.exec_prefix() : exec_prefix) + "' --timeout 60 " + extra);
  }

  // A script that runs its arguments in namespace {rank} of `mesh`, with `rank_2` as a shell
  // command in place of the plain `ip netns exec` on rank 2 ("$ns" and "$@" are set there).
  std::string wrapper(const hw::NetnsMesh& mesh, int world, const std::string& rank_2) {
    const std::string path = dir_ + "/wrapper";
    std::string cases;
    for (int r = 0; r < world; ++r) cases += std::to_string(r) + ") ns=" + mesh.ns(r) + ";; ";
    std::ofstream(path) << "#!/bin/sh\nrank=$1; shift\ncase $rank in " << cases << "esac\n"
                        << "if [ \"$rank\" = 2 ]; then " << rank_2 << "; else exec ip netns exec $ns \"$@\"; fi\n";
    must("chmod +x " + path);
    return path + " {rank}";
  }

  static void must(const std::string& command) {
    const auto r = run_shell(command + " 2>&1");
    ASSERT_EQ(r.exit_code, 0) << command << ": " << r.output;
  }

  std::string dir_;
};

// The probe's ranks prove membership like a run's: rank 2's command lines are recorded to
// show each takes the secret on stdin (--secret-stdin) and none carries it.
TEST_F(DoctorTest, AHealthyMeshPassesEveryCheckIncludingTheProbe) {
  hw::NetnsMesh mesh(3);
  const std::string argv_log = dir_ + "/argv-2";
  const auto r = doctor(mesh, "--json " + dir_ + "/doctor.json",
                        wrapper(mesh, 3, "echo \"$*\" >> " + argv_log + "; exec ip netns exec $ns \"$@\""));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const std::string argv = testsupport::read_file(argv_log);
  EXPECT_THAT(argv, testing::ContainsRegex("probe --rank 2 .*--secret-stdin")) << argv;
  EXPECT_THAT(argv, Not(testing::ContainsRegex("[0-9a-f]{64}"))) << argv;
  EXPECT_THAT(r.output, Not(HasSubstr("FAIL")));
  EXPECT_THAT(r.output, HasSubstr("PASS cabling    rank 0:v1 <-> rank 1:v0: one cable, both ends up"));
  EXPECT_THAT(r.output, HasSubstr("PASS probe      rank 1 - rank 2"));
  const auto report = nlohmann::json::parse(testsupport::read_file(dir_ + "/doctor.json"));
  EXPECT_EQ(report["hosts"].size(), 3u);
  EXPECT_EQ(report["hosts"][0]["ports"].size(), 3u) << "lo and the two veths of namespace 0";
}

TEST_F(DoctorTest, AMissingAddressIsNamedWithItsPortAndThePairLeftWithoutACable) {
  hw::NetnsMesh mesh(3);
  const std::string address = mesh.cluster(5000)["hosts"][0]["ips"][0];  // rank 0's end of the 0-1 cable
  must("ip -n " + mesh.ns(0) + " addr del " + address + "/24 dev v1");
  const auto r = doctor(mesh);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("FAIL address    rank 0:v1: is cabled (carrier) but has no IPv4 address"));
  EXPECT_THAT(r.output, HasSubstr("FAIL address    rank 0: the cluster file gives it " + address));
  EXPECT_THAT(r.output, HasSubstr("sudo ip addr add " + address + "/30 dev v1"));
  EXPECT_THAT(r.output, HasSubstr("FAIL cabling    rank 0 - rank 1: no cable"));
  EXPECT_THAT(r.output, HasSubstr("PASS cabling    rank 1:v2 <-> rank 2:v1"));
}

TEST_F(DoctorTest, ACableDownIsNamedByBothEnds) {
  hw::NetnsMesh mesh(3);
  must("ip -n " + mesh.ns(1) + " link set v2 down");
  const auto r = doctor(mesh);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output,
              HasSubstr("FAIL cabling    rank 1:v2 <-> rank 2:v1: the cable is down: rank 1:v2 is configured down"));
  EXPECT_THAT(r.output, HasSubstr("FAIL probe      every cable: not probed"));
}

TEST_F(DoctorTest, ARateLimitedCableIsTheProbesOutlier) {
  hw::NetnsMesh mesh(3);
  for (const auto& [ns, dev] : {std::pair{mesh.ns(0), "v2"}, std::pair{mesh.ns(2), "v0"}})
    must("ip netns exec " + ns + " tc qdisc add dev " + dev + " root tbf rate 40mbit burst 16kb latency 400ms");
  const auto r = doctor(mesh);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("FAIL probe      rank 0 - rank 2"));
  EXPECT_THAT(r.output, HasSubstr("an outlier"));
  EXPECT_THAT(r.output, HasSubstr("PASS probe      rank 0 - rank 1"));
  EXPECT_THAT(r.output, HasSubstr("PASS probe      rank 1 - rank 2"));
}

TEST_F(DoctorTest, TwoCablesBetweenOnePairAreBothNamed) {
  hw::NetnsMesh mesh(3);
  must("ip -n " + mesh.ns(0) + " link add name x1 type veth peer name x0 netns " + mesh.ns(1));
  must("ip -n " + mesh.ns(0) + " addr add 10.98.0.1/24 dev x1");
  must("ip -n " + mesh.ns(1) + " addr add 10.98.0.2/24 dev x0");
  must("ip -n " + mesh.ns(0) + " link set x1 up");
  must("ip -n " + mesh.ns(1) + " link set x0 up");
  const auto r = doctor(mesh);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("FAIL cabling    rank 0 - rank 1: 2 cables between one pair:"));
  EXPECT_THAT(r.output, HasSubstr("rank 0:v1 <-> rank 1:v0"));
  EXPECT_THAT(r.output, HasSubstr("rank 0:x1 <-> rank 1:x0"));
}

// Another build on one host: its facts are the real ones with the version
// line rewritten on the way back, as a host with another meshinfer prints it.
TEST_F(DoctorTest, AHostOnAnotherVersionIsNamed) {
  hw::NetnsMesh mesh(3);
  const auto r = doctor(mesh, "--no-probe",
                        wrapper(mesh, 3, "ip netns exec $ns \"$@\" | sed 's/meshinfer 0.1.0 (/meshinfer 0.0.9 (/'"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("FAIL version    rank 2: runs `meshinfer 0.0.9 ("));
  EXPECT_THAT(r.output, HasSubstr("PASS version    rank 0"));
  EXPECT_THAT(r.output, HasSubstr("PASS version    rank 1"));
}

TEST_F(DoctorTest, AHostThatDoesNotAnswerIsNamedWithWhatItSaid) {
  hw::NetnsMesh mesh(3);
  const auto r = doctor(mesh, "--no-probe",
                        wrapper(mesh, 3, "echo 'ssh: connect to host mac3 port 22: Connection refused' >&2; exit 255"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("FAIL reach      rank 2: ended with status 255: ssh: connect to host mac3 port 22"));
  EXPECT_THAT(r.output, HasSubstr("PASS cabling    rank 0:v1 <-> rank 1:v0"));
}

TEST_F(DoctorTest, EachHostsFreeMemoryIsCheckedAgainstItsShard) {
  hw::NetnsMesh mesh(4);
  const std::string small =
      testsupport::write_json(dir_, "small", testsupport::small_scenario("doctor-small", 4, 1, 4));
  const auto fits = doctor(mesh, "--no-probe --scenario " + small);
  EXPECT_EQ(fits.exit_code, 0) << fits.output;
  EXPECT_THAT(fits.output, HasSubstr("PASS memory     rank 3: "));
  // Qwen3-235B 8-bit over four nodes: tens of GB of weights per host.
  const auto big =
      doctor(mesh, "--no-probe --scenario " + std::string(MESHINFER_SOURCE_DIR) + "/scenarios/default.json");
  EXPECT_EQ(big.exit_code, 1) << big.output;
  EXPECT_THAT(big.output, HasSubstr("FAIL memory     rank 0: "));
  EXPECT_THAT(big.output, HasSubstr("GB of weights"));
}

// The mesh's cluster file for "transport": "rdma": rank r reaches rank k through
// softrdma's device on its veth towards k (rdma_v<k>), or `odd_one` where it names one.
nlohmann::json rdma_cluster(const hw::NetnsMesh& mesh, int world, const std::string& odd_one = "") {
  nlohmann::json c = mesh.cluster(5000, true);
  if (!odd_one.empty()) c["hosts"][world - 1]["rdma"][0] = odd_one;
  return c;
}

class DoctorRdmaTest : public DoctorTest {
 protected:
  void SetUp() override {
    DoctorTest::SetUp();
    if (IsSkipped()) return;
    SKIP_UNLESS_SOFTRDMA_BUILT();
  }

  testsupport::CliResult rdma_doctor(const hw::NetnsMesh& mesh, const nlohmann::json& cluster) {
    const std::string file = testsupport::write_json(dir_, "rdma-cluster", cluster);
    return testsupport::run_cli("doctor --no-probe --cluster " + file + " --exec-prefix '" + mesh.exec_prefix() +
                                " env LD_PRELOAD=" + testsupport::kSoftRdma + "' --timeout 60");
  }
};

TEST_F(DoctorRdmaTest, SoftrdmaDevicesOnEveryCablePassTheRdmaChecks) {
  hw::NetnsMesh mesh(3);
  const auto r = rdma_doctor(mesh, rdma_cluster(mesh, 3));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("PASS rdma       rank 0:rdma_v1 <-> rank 1:rdma_v0: both ACTIVE, GIDs ::ffff:"));
  EXPECT_THAT(r.output, HasSubstr("PASS rdma       rank 1:rdma_v2 <-> rank 2:rdma_v1"));
}

TEST_F(DoctorRdmaTest, AnUnequalMtuAndAMisnamedDeviceAreNamed) {
  hw::NetnsMesh mesh(3);
  must("ip -n " + mesh.ns(0) + " link set v1 mtu 9000");  // softrdma's active MTU follows the port's
  const auto r = rdma_doctor(mesh, rdma_cluster(mesh, 3, "rdma_en9"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(
      r.output,
      HasSubstr("FAIL rdma       rank 0:rdma_v1 <-> rank 1:rdma_v0: active MTU 4096 at rank 0, 1024 at rank 1"));
  EXPECT_THAT(r.output, HasSubstr("FAIL rdma       rank 2:rdma_en9: no such RDMA device (ibv_devinfo lists: "));
  EXPECT_THAT(r.output, HasSubstr("PASS rdma       rank 1:rdma_v2 <-> rank 2:rdma_v1"));
}

TEST_F(DoctorRdmaTest, ABundleHoldsTheFindingsTheProbedCardAndEachHostsRdmaConformanceButNotTheSecret) {
  hw::NetnsMesh mesh(3);
  nlohmann::json cluster = rdma_cluster(mesh, 3);
  cluster["secret"] = std::string(40, 'k');
  const std::string file = testsupport::write_json(dir_, "rdma-cluster", cluster);
  const std::string bundle_file = dir_ + "/bundle.json";
  const auto r =
      testsupport::run_cli("doctor --cluster " + file + " --exec-prefix '" + mesh.exec_prefix() +
                           " env LD_PRELOAD=" + testsupport::kSoftRdma + "' --timeout 60 --bundle " + bundle_file);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const std::string text = testsupport::read_file(bundle_file);
  EXPECT_THAT(text, Not(HasSubstr(std::string(40, 'k'))));
  const auto bundle = nlohmann::json::parse(text);
  EXPECT_EQ(bundle["cluster"]["transport"], "rdma");
  EXPECT_FALSE(bundle["findings"].empty());
  ASSERT_EQ(bundle["hosts"].size(), 3u);
  EXPECT_THAT(bundle["hosts"][2]["system"].get<std::string>(), HasSubstr("Linux"));
  EXPECT_EQ(bundle["link_card"]["frame_bytes"], 4096) << "the card of the cable the probe measured, over verbs";
  ASSERT_EQ(bundle["rdma_check"].size(), 3u);
  for (int r = 0; r < 3; ++r) {
    const auto& devices = bundle["rdma_check"][r]["devices"];
    ASSERT_EQ(devices.size(), 2u) << bundle["rdma_check"][r].dump();
    for (const auto& d : devices)
      for (const auto& rule : d["rules"]) EXPECT_EQ(rule["verdict"], "as documented") << d["device"] << rule.dump();
  }
}

}  // namespace
