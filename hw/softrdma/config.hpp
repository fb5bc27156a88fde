// softrdma's settings, read once from the environment, and how it says no.
//   SOFTRDMA_MAX_FRAME  largest SEND in bytes: 4096 (macOS 26.2, the default) up to 524288 (26.3)
//   SOFTRDMA_ALLOW      comma list lifting macOS refusals that rdma-core's own examples trip:
//                       recv-before-rts, local-write-mr (ibv_uc_pingpong needs both)
//   SOFTRDMA_LOSS, SOFTRDMA_REORDER, SOFTRDMA_SEED   faults on the wire, read when a context opens:
//                       the chance that a packet is lost, or held back and sent after the next one
//                       (0 to 1, default 0), and the seed of their generator (default 1)
//   SOFTRDMA_FAULT_FILE  those two rates per device while the process runs, from a file a launcher
//                       rewrites (hw/softrdma/fault_file.cpp)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace softrdma {

struct Config {
  std::size_t max_frame = 4096;
  bool allow_recv_before_rts = false;
  bool allow_local_write_mr = false;
  std::string error;  // non-empty when the environment is malformed; no device is listed then
};

const Config& config();

struct WireFaults {
  double loss = 0, reorder = 0;
  std::uint64_t seed = 1;
  bool any() const { return loss > 0 || reorder > 0; }
};
// Read from the environment now. Returns false, having said why on stderr, when malformed.
bool read_wire_faults(WireFaults* faults);

// Prints "softrdma: CALL refused: WHY" to stderr, sets errno to `err` and returns it.
int refuse(const char* call, int err, const std::string& why);

}  // namespace softrdma
