// The link card `meshinfer probe` writes from its figures, computed by hand:
// the overhead from the small busy round, the bandwidth by size from the larger ones.
#include "hw/link_probe.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "engine/catalog.hpp"

namespace {

namespace fs = std::filesystem;

// Three ranks, every pair 10 us apart at 10 MB/s; frames of 1,000 bytes, padded (no headers).
const std::vector<hw::PairFigures> kPairs = {{0, 1, 10e-6, 1e7, 1e7}, {0, 2, 10e-6, 1e7, 1e7}, {1, 2, 10e-6, 1e7, 1e7}};

nlohmann::ordered_json card(const std::vector<hw::BusyRound>& rounds) {
  return hw::link_card("probed", kPairs, "thunderbolt", 1000, 0, rounds);
}

TEST(LinkProbeCard, WithoutRoundsTheIdleStackCostIsInTheLatency) {
  const auto c = card({});
  EXPECT_DOUBLE_EQ(c["latency_us"].get<double>(), 10);
  EXPECT_DOUBLE_EQ(c["bandwidth_gbps"].get<double>(), 0.08);
  EXPECT_EQ(c["per_message_overhead_us"].get<double>(), 0);
  EXPECT_FALSE(c.contains("bandwidth_by_size"));
}

// The small round (400 us) is two overheads, the latency (10 us) and a frame at 10 MB/s (100 us): 145 us each.
TEST(LinkProbeCard, TheSmallRoundSetsThePerMessageOverhead) {
  EXPECT_DOUBLE_EQ(card({{8, 400e-6}})["per_message_overhead_us"].get<double>(), 145);
}

// The small message is at the bulk rate (as the overhead took it). 2,000 bytes took 200 us more than the small
// round: 300 us on the wire, 6.67 MB/s. 4,000 bytes took less than 2,000 (noise): read as the same 300 us, so a
// larger message never crosses faster, and the card loads.
TEST(LinkProbeCard, LargerRoundsSetTheBandwidthBySize) {
  const auto c = card({{8, 400e-6}, {2000, 600e-6}, {4000, 500e-6}});
  ASSERT_EQ(c["bandwidth_by_size"].size(), 3u);
  EXPECT_EQ(c["bandwidth_by_size"][0]["bytes"], 8);
  EXPECT_NEAR(c["bandwidth_by_size"][0]["bandwidth_gbps"].get<double>(), 0.08, 1e-12);
  EXPECT_EQ(c["bandwidth_by_size"][1]["bytes"], 2000);
  EXPECT_NEAR(c["bandwidth_by_size"][1]["bandwidth_gbps"].get<double>(), 2000 / 300e-6 * 8 / 1e9, 1e-12);
  EXPECT_NEAR(c["bandwidth_by_size"][2]["bandwidth_gbps"].get<double>(), 4000 / 300e-6 * 8 / 1e9, 1e-12);

  const fs::path dir = fs::temp_directory_path() / ("meshinfer-link-probe-" + std::to_string(getpid()));
  fs::create_directories(dir / "links");
  std::ofstream(dir / "links" / "probed.json") << c.dump();
  const engine::Catalog catalog = engine::Catalog::load(dir.string());
  fs::remove_all(dir);
  // 3,000 bytes, between the last two: 300 us, which is 3,000 bytes at the bulk 10 MB/s.
  EXPECT_NEAR(engine::timed_bytes(catalog.link("probed"), 3000), 3000, 1e-6);
}

}  // namespace
