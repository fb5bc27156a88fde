// A link card's bandwidth by message size: the time a message spends on the
// wire, interpolated between measured sizes, and the cards that are refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/catalog.hpp"
#include "engine/error.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// 1 MB/s in bulk; 1,000 bytes cross at 10 MB/s, 5,000 at 2 MB/s. No frames: wire bytes are the message's.
engine::LinkCard shaped() {
  engine::LinkCard c;
  c.bandwidth = 1e6;
  c.bandwidth_by_size = {{1000, 10e6}, {5000, 2e6}};
  return c;
}

TEST(BandwidthBySize, WithoutATableAMessageTakesItsWireBytes) {
  engine::LinkCard c;
  c.bandwidth = 1e6;
  c.frame_bytes = 1448;
  c.frame_header_bytes = 66;
  EXPECT_DOUBLE_EQ(engine::timed_bytes(c, 240), engine::wire_bytes(c, 240));
}

// Below the first size at its rate: 500 bytes at 10 MB/s take 50 us, 50 bytes at 1 MB/s.
TEST(BandwidthBySize, BelowTheFirstSizeAMessageCrossesAtItsRate) {
  EXPECT_DOUBLE_EQ(engine::timed_bytes(shaped(), 500), 50);
}

// 1,000 bytes take 100 us, 5,000 take 2,500 us: 3,000 bytes, halfway, take 1,300 us.
TEST(BandwidthBySize, BetweenSizesTheTimeIsInterpolated) {
  EXPECT_DOUBLE_EQ(engine::timed_bytes(shaped(), 1000), 100);
  EXPECT_DOUBLE_EQ(engine::timed_bytes(shaped(), 3000), 1300);
  EXPECT_DOUBLE_EQ(engine::timed_bytes(shaped(), 5000), 2500);
}

// Beyond the last size every further byte crosses at the bulk rate: 2,500 us + 1,000 us.
TEST(BandwidthBySize, BeyondTheLastSizeEachByteCrossesAtTheBulkRate) {
  EXPECT_DOUBLE_EQ(engine::timed_bytes(shaped(), 6000), 3500);
}

class BandwidthBySizeCard : public testing::Test {
 protected:
  void TearDown() override { fs::remove_all(dir_); }

  // Reads a card with this table; the refusal's JSON path and reason, or "" when accepted.
  std::string refusal(const json& table) {
    const json card = {{"bandwidth_gbps", 0.008}, {"latency_us", 30},        {"per_message_overhead_us", 0},
                       {"frame_bytes", 1500},     {"port_kind", "ethernet"}, {"bandwidth_by_size", table}};
    fs::create_directories(dir_);
    const std::string file = (dir_ / "shaped.json").string();
    std::ofstream(file) << card.dump();
    engine::Catalog c = engine::Catalog::builtin();
    try {
      c.add_card_file(file);
    } catch (const engine::InputError& e) {
      EXPECT_EQ(e.file(), file);
      return e.json_path() + ": " + e.reason();
    }
    loaded_ = c.link("shaped");
    return "";
  }

  fs::path dir_ = fs::temp_directory_path() / ("meshinfer-by-size-" + std::to_string(getpid()));
  engine::LinkCard loaded_;
};

TEST_F(BandwidthBySizeCard, LoadsInSiUnits) {
  ASSERT_EQ(refusal(json::parse(R"([{"bytes": 1000, "bandwidth_gbps": 0.08}, {"bytes": 4000, "bandwidth_gbps": 0.04}])")),
            "");
  ASSERT_EQ(loaded_.bandwidth_by_size.size(), 2u);
  EXPECT_DOUBLE_EQ(loaded_.bandwidth_by_size[1].bytes, 4000);
  EXPECT_DOUBLE_EQ(loaded_.bandwidth_by_size[1].bandwidth, 5e6);
}

TEST_F(BandwidthBySizeCard, RefusesSizesThatDoNotIncrease) {
  EXPECT_EQ(refusal(json::parse(R"([{"bytes": 4000, "bandwidth_gbps": 0.08}, {"bytes": 4000, "bandwidth_gbps": 0.04}])")),
            "/bandwidth_by_size/1: bytes must increase from one point to the next: 4000 after 4000");
}

// 3,000 bytes (two 1,500-byte frames) at 0.8 Gb/s would cross in 30 us, before 1,000 bytes at 0.08 Gb/s (150 us).
TEST_F(BandwidthBySizeCard, RefusesALargerMessageCrossingFaster) {
  EXPECT_EQ(refusal(json::parse(R"([{"bytes": 1000, "bandwidth_gbps": 0.08}, {"bytes": 3000, "bandwidth_gbps": 0.8}])")),
            "/bandwidth_by_size/1: a message of 3000 bytes would cross in 30 us, faster than one of 1000 in 150 us");
}

TEST_F(BandwidthBySizeCard, RefusesABadPoint) {
  EXPECT_EQ(refusal(json::parse(R"([{"bytes": 1000, "bandwidth_gbps": 0}])")),
            "/bandwidth_by_size/0/bandwidth_gbps: must be > 0, got 0");
  EXPECT_EQ(refusal(json::parse(R"([{"bytes": 0.5, "bandwidth_gbps": 1}])")),
            "/bandwidth_by_size/0/bytes: must be an integer, got 0.5");
  EXPECT_NE(refusal(json::parse(R"([{"bytes": 1000, "gbps": 1}])")).find("/bandwidth_by_size/0/gbps: unknown key"),
            std::string::npos);
  EXPECT_NE(refusal(json::parse(R"({"bytes": 1000})")).find("/bandwidth_by_size: must be an array"), std::string::npos);
}

}  // namespace
