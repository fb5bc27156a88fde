// A link card's time on the wire by message size: interpolated between
// measured sizes, and the cards that are refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/base/error.hpp"
#include "engine/cards/catalog.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// 1 MB/s in bulk; 1,000 bytes take 100 us on the wire, 5,000 take 2,500 us. No frames: wire bytes are the
// message's. timed_bytes is in bytes at 1 MB/s: a microsecond each.
engine::LinkCard shaped() {
  engine::LinkCard c;
  c.bandwidth = 1e6;
  c.wire_time_by_size = {{1000, 100e-6}, {5000, 2500e-6}};
  return c;
}

TEST(WireTimeBySize, WithoutATableAMessageTakesItsWireBytes) {
  engine::LinkCard c;
  c.bandwidth = 1e6;
  c.frame_bytes = 1448;
  c.frame_header_bytes = 66;
  EXPECT_DOUBLE_EQ(engine::timed_bytes(c, 240), engine::wire_bytes(c, 240));
}

// Below the first size in proportion to its wire bytes: 500 bytes, 50 us.
TEST(WireTimeBySize, BelowTheFirstSizeATimeInProportion) {
  EXPECT_DOUBLE_EQ(engine::timed_bytes(shaped(), 500), 50);
}

// Halfway from 1,000 to 5,000 bytes, halfway from 100 to 2,500 us.
TEST(WireTimeBySize, BetweenSizesTheTimeIsInterpolated) {
  EXPECT_DOUBLE_EQ(engine::timed_bytes(shaped(), 1000), 100);
  EXPECT_DOUBLE_EQ(engine::timed_bytes(shaped(), 3000), 1300);
  EXPECT_DOUBLE_EQ(engine::timed_bytes(shaped(), 5000), 2500);
}

// Beyond the last size every further byte crosses at the bulk rate: 2,500 us + 1,000 us.
TEST(WireTimeBySize, BeyondTheLastSizeEachByteCrossesAtTheBulkRate) {
  EXPECT_DOUBLE_EQ(engine::timed_bytes(shaped(), 6000), 3500);
}

// A probe's first point: the small message's time is in the latency, none on the wire.
TEST(WireTimeBySize, ASmallMessageMayTakeNoTimeBeyondTheLatency) {
  engine::LinkCard c = shaped();
  c.wire_time_by_size.insert(c.wire_time_by_size.begin(), {8, 0});
  EXPECT_DOUBLE_EQ(engine::timed_bytes(c, 8), 0);
  EXPECT_DOUBLE_EQ(engine::timed_bytes(c, 504), 50);
}

class WireTimeBySizeCard : public testing::Test {
 protected:
  void TearDown() override { fs::remove_all(dir_); }

  // Reads a card with this table; the refusal's JSON path and reason, or "" when accepted.
  std::string refusal(const json& table) {
    const json card = {{"bandwidth_gbps", 0.008}, {"latency_us", 30},        {"per_message_overhead_us", 0},
                       {"frame_bytes", 1500},     {"port_kind", "ethernet"}, {"wire_time_by_size", table}};
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

  fs::path dir_ = fs::temp_directory_path() / ("meshinfer-wire-time-" + std::to_string(getpid()));
  engine::LinkCard loaded_;
};

TEST_F(WireTimeBySizeCard, LoadsInSiUnits) {
  ASSERT_EQ(refusal(json::parse(R"([{"bytes": 8, "us": 0}, {"bytes": 4000, "us": 900}])")), "");
  ASSERT_EQ(loaded_.wire_time_by_size.size(), 2u);
  EXPECT_DOUBLE_EQ(loaded_.wire_time_by_size[1].bytes, 4000);
  EXPECT_DOUBLE_EQ(loaded_.wire_time_by_size[1].seconds, 900e-6);
}

TEST_F(WireTimeBySizeCard, RefusesSizesThatDoNotIncrease) {
  EXPECT_EQ(refusal(json::parse(R"([{"bytes": 4000, "us": 10}, {"bytes": 4000, "us": 20}])")),
            "/wire_time_by_size/1: bytes must increase from one point to the next: 4000 after 4000");
}

TEST_F(WireTimeBySizeCard, RefusesALargerMessageCrossingFaster) {
  EXPECT_EQ(refusal(json::parse(R"([{"bytes": 1000, "us": 150}, {"bytes": 3000, "us": 30}])")),
            "/wire_time_by_size/1: a message of 3000 bytes would cross in 30 us, faster than one of 1000 in 150 us");
}

TEST_F(WireTimeBySizeCard, RefusesABadPoint) {
  EXPECT_EQ(refusal(json::parse(R"([{"bytes": 1000, "us": -1}])")), "/wire_time_by_size/0/us: must be >= 0, got -1");
  EXPECT_EQ(refusal(json::parse(R"([{"bytes": 0.5, "us": 1}])")),
            "/wire_time_by_size/0/bytes: must be an integer, got 0.5");
  EXPECT_NE(refusal(json::parse(R"([{"bytes": 1000, "time": 1}])")).find("/wire_time_by_size/0/time: unknown key"),
            std::string::npos);
  EXPECT_NE(refusal(json::parse(R"({"bytes": 1000})")).find("/wire_time_by_size: must be an array"), std::string::npos);
}

}  // namespace
