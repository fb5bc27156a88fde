#include "hw/softrdma/config.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <utility>

namespace softrdma {

namespace {

constexpr std::size_t kMinFrame = 256, kMaxFrame = 512 * 1024;  // macOS 26.3 strides go up to 512 KiB

Config read_environment() {
  Config c;
  if (const char* v = std::getenv("SOFTRDMA_MAX_FRAME")) {
    char* end = nullptr;
    const unsigned long long n = std::strtoull(v, &end, 10);
    if (end == v || *end != '\0' || n < kMinFrame || n > kMaxFrame)
      c.error = std::string("SOFTRDMA_MAX_FRAME=") + v + ": want a byte count from 256 to 524288";
    else
      c.max_frame = n;
  }
  if (const char* v = std::getenv("SOFTRDMA_ALLOW")) {
    std::stringstream list(v);
    for (std::string item; std::getline(list, item, ',');) {
      if (item == "recv-before-rts")
        c.allow_recv_before_rts = true;
      else if (item == "local-write-mr")
        c.allow_local_write_mr = true;
      else if (!item.empty())
        c.error = "SOFTRDMA_ALLOW: unknown item '" + item + "' (known: recv-before-rts, local-write-mr)";
    }
  }
  if (!c.error.empty()) std::fprintf(stderr, "softrdma: %s; no device is listed\n", c.error.c_str());
  return c;
}

}  // namespace

const Config& config() {
  static const Config c = read_environment();
  return c;
}

bool read_wire_faults(WireFaults* faults) {
  *faults = WireFaults{};
  for (auto [name, rate] :
       {std::pair{"SOFTRDMA_LOSS", &faults->loss}, std::pair{"SOFTRDMA_REORDER", &faults->reorder}}) {
    const char* v = std::getenv(name);
    if (!v) continue;
    char* end = nullptr;
    *rate = std::strtod(v, &end);
    if (end == v || *end != '\0' || !(*rate >= 0 && *rate <= 1)) {
      std::fprintf(stderr, "softrdma: %s=%s: want a probability from 0 to 1\n", name, v);
      return false;
    }
  }
  if (const char* v = std::getenv("SOFTRDMA_SEED")) {
    char* end = nullptr;
    faults->seed = std::strtoull(v, &end, 10);
    if (end == v || *end != '\0') {
      std::fprintf(stderr, "softrdma: SOFTRDMA_SEED=%s: want an unsigned integer\n", v);
      return false;
    }
  }
  return true;
}

int refuse(const char* call, int err, const std::string& why) {
  std::fprintf(stderr, "softrdma: %s refused: %s\n", call, why.c_str());
  errno = err;
  return err;
}

}  // namespace softrdma
