// The link card `meshinfer probe` writes from its figures, computed by hand:
// the overhead from the small busy round, the bandwidth by size from the larger ones.
#include "hw/link_probe.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <fstream>

#include "engine/cards/catalog.hpp"

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
  EXPECT_FALSE(c.contains("wire_time_by_size"));
}

// The small round (400 us) is two overheads and the latency (10 us, an idle small message's): 195 us each.
TEST(LinkProbeCard, TheSmallRoundSetsThePerMessageOverhead) {
  EXPECT_DOUBLE_EQ(card({{8, 400e-6}})["per_message_overhead_us"].get<double>(), 195);
}

// The small message's time is in the latency: none on the wire. 2,000 bytes took 200 us more than the small
// round; 4,000 bytes took less than 2,000 (noise): read as the same 200 us, so a larger message never crosses
// faster, and the card loads.
TEST(LinkProbeCard, LargerRoundsSetTheWireTimeBySize) {
  const auto c = card({{8, 400e-6}, {2000, 600e-6}, {4000, 500e-6}});
  const auto& table = c["wire_time_by_size"];
  ASSERT_EQ(table.size(), 3u);
  const std::array sizes{8, 2000, 4000};
  for (std::size_t k = 0; k < sizes.size(); ++k) EXPECT_EQ(table[k]["bytes"], sizes[k]);
  EXPECT_EQ(table[0]["us"], 0);
  EXPECT_NEAR(table[1]["us"].get<double>(), 200, 1e-9);
  EXPECT_EQ(table[2]["us"], table[1]["us"]);

  const fs::path dir = fs::temp_directory_path() / ("meshinfer-link-probe-" + std::to_string(getpid()));
  fs::create_directories(dir / "links");
  std::ofstream(dir / "links" / "probed.json") << c.dump();
  const engine::Catalog catalog = engine::Catalog::load(dir.string());
  fs::remove_all(dir);
  // 1,004 bytes, halfway from the small message to 2,000: 100 us, which is 1,000 bytes at the bulk 10 MB/s.
  EXPECT_NEAR(engine::timed_bytes(catalog.link("probed"), 1004), 1000, 1e-6);
}

}  // namespace
