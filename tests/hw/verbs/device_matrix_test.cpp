// The device matrix as MLX-based tools write it, and the errors a user sees
// when it is wrong: the file, the JSON path and the pair of ranks.
#include "hw/verbs/device_matrix.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "engine/base/error.hpp"
#include "support/cli_runner.hpp"

namespace {

using nlohmann::json;

engine::InputError parse_error(const json& j) {
  try {
    const std::string file = "cluster.json";
    hw::DeviceMatrix::parse(engine::JsonValue(j, "", file));
  } catch (const engine::InputError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted " << j.dump();
  return engine::InputError("", "", "");
}

TEST(DeviceMatrix, ParsesAFourRankMesh) {
  const json j = json::parse(R"([[null, "rdma_en3", "rdma_en4", "rdma_en5"],
                                 ["rdma_en3", null, "rdma_en5", "rdma_en4"],
                                 ["rdma_en4", "rdma_en5", null, "rdma_en3"],
                                 ["rdma_en5", "rdma_en4", "rdma_en3", null]])");
  const std::string file = "m.json";
  const hw::DeviceMatrix m = hw::DeviceMatrix::parse(engine::JsonValue(j, "", file));
  EXPECT_EQ(m.world(), 4);
  EXPECT_EQ(m.device(0, 1), "rdma_en3");
  EXPECT_EQ(m.device(2, 3), "rdma_en3");
  EXPECT_EQ(m.device(3, 0), "rdma_en5");
  EXPECT_FALSE(m.row(1)[1].has_value());
  EXPECT_EQ(*m.row(1)[2], "rdma_en5");
}

TEST(DeviceMatrix, OneRankNeedsNoDevice) {
  const json j = json::parse("[[null]]");
  const std::string file = "m.json";
  EXPECT_EQ(hw::DeviceMatrix::parse(engine::JsonValue(j, "", file)).world(), 1);
}

TEST(DeviceMatrix, MissingDeviceNamesThePair) {
  const auto e = parse_error(json::parse(R"([[null, "rdma_en3"], [null, null]])"));
  EXPECT_EQ(e.file(), "cluster.json");
  EXPECT_EQ(e.json_path(), "/1/0");
  EXPECT_NE(e.reason().find("rank 1 -> rank 0"), std::string::npos) << e.what();
}

TEST(DeviceMatrix, EmptyNameIsRefused) {
  EXPECT_EQ(parse_error(json::parse(R"([[null, ""], ["rdma_en3", null]])")).json_path(), "/0/1");
}

TEST(DeviceMatrix, DeviceOnTheDiagonalIsRefused) {
  const auto e = parse_error(json::parse(R"([["rdma_en1", "rdma_en3"], ["rdma_en3", null]])"));
  EXPECT_EQ(e.json_path(), "/0/0");
  EXPECT_NE(e.reason().find("itself must be null"), std::string::npos) << e.what();
}

TEST(DeviceMatrix, RowOfTheWrongLengthIsRefused) {
  const auto e = parse_error(json::parse(R"([[null, "rdma_en3"], ["rdma_en3"]])"));
  EXPECT_EQ(e.json_path(), "/1");
  EXPECT_NE(e.reason().find("array of 2 entries"), std::string::npos) << e.what();
}

TEST(DeviceMatrix, NotAnArrayIsRefused) {
  EXPECT_EQ(parse_error(json::parse(R"({"rdma": []})")).json_path(), "");
  EXPECT_EQ(parse_error(json::array()).json_path(), "");
  EXPECT_EQ(parse_error(json::parse(R"([[null, 3], ["rdma_en3", null]])")).json_path(), "/0/1");
}

TEST(DeviceMatrix, RowsFromAHostfileReportTheirOwnPath) {
  const json hosts = json::parse(R"([{"ssh": "a", "rdma": [null, "rdma_en3"]},
                                     {"ssh": "b", "rdma": ["rdma_en3", "rdma_en2"]}])");
  const std::string file = "hosts.json";
  std::vector<engine::JsonValue> rows;
  for (std::size_t i = 0; i < hosts.size(); ++i)
    rows.emplace_back(hosts[i]["rdma"], "/hosts/" + std::to_string(i) + "/rdma", file);
  try {
    hw::DeviceMatrix::parse(rows);
    FAIL() << "accepted a device on the diagonal";
  } catch (const engine::InputError& e) {
    EXPECT_EQ(e.json_path(), "/hosts/1/rdma/1");
  }
}

TEST(DeviceMatrix, LoadReadsAFileAndNamesItInErrors) {
  const std::string dir = testsupport::fresh_dir("device_matrix");
  std::ofstream(dir + "/good.json") << R"([[null, "rxe0"], ["rxe0", null]])";
  EXPECT_EQ(hw::DeviceMatrix::load(dir + "/good.json").device(1, 0), "rxe0");
  std::ofstream(dir + "/bad.json") << R"([[null, "rxe0"], ["rxe0", null])";
  try {
    hw::DeviceMatrix::load(dir + "/bad.json");
    FAIL() << "accepted malformed JSON";
  } catch (const engine::InputError& e) {
    EXPECT_EQ(e.file(), dir + "/bad.json");
  }
  EXPECT_THROW(hw::DeviceMatrix::load(dir + "/absent.json"), engine::InputError);
}

}  // namespace
