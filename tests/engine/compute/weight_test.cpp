// A weight computed in place from its mapped file: prefaulting maps the pages
// of the block a rank computes from before its first step, and not the rest.
#include "engine/compute/weight.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/checkpoint/safetensors.hpp"
#include "support/cli_runner.hpp"

namespace {

// Kilobytes of `path`'s mapping resident in this process (/proc/self/smaps).
long mapped_kb(const std::string& path) {
  std::ifstream smaps("/proc/self/smaps");
  bool in = false;
  for (std::string line; std::getline(smaps, line);) {
    if (line.ends_with(" " + path))
      in = true;
    else if (in && line.starts_with("Rss:"))
      return std::stol(line.substr(4));
  }
  return -1;
}

// Resident memory stays near the shard's share of the file (give or take the
// page cache's large folios, mapped whole, up to 2 MiB).
TEST(Weight, PrefaultMapsTheBlockAndNotTheRest) {
#ifdef MADV_POPULATE_READ
  void* probe = ::mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  const bool refused = ::madvise(probe, 4096, MADV_POPULATE_READ) != 0;
  ::munmap(probe, 4096);
  if (refused) GTEST_SKIP() << "this kernel cannot populate a mapping (Linux 5.14+)";
#else
  GTEST_SKIP() << "no MADV_POPULATE_READ here: pages fault in on first use";
#endif
  const std::string path =
      std::filesystem::canonical(testsupport::fresh_dir("weight-prefault")).string() + "/model.safetensors";
  const int rows = 4096, cols = 1024;  // 16 MiB of f32
  engine::write_safetensors(path, {{"w", {rows, cols}, std::vector<float>(rows * cols, 1.0f)}});
  const engine::SafetensorsFile f(path);
  const long half_kb = rows / 2 * cols * 4 / 1024, folio_kb = 2048;
  EXPECT_LE(mapped_kb(path), folio_kb);  // the header
  const float* data = reinterpret_cast<const float*>(f.bytes(f.info("w")));
  engine::Weight::dense(data, cols, rows / 2, cols, nullptr).prefault();
  EXPECT_GE(mapped_kb(path), half_kb);
  EXPECT_LE(mapped_kb(path), half_kb + 2 * folio_kb);
}

}  // namespace
