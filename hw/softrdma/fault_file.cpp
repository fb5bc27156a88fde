// SOFTRDMA_FAULT_FILE: the rates of loss and reordering changed while the
// process runs, as a launcher carries out a scenario's rdma-packet-loss. Each
// line is "ADDRESS LOSS REORDER": a device takes the line of its interface's
// IPv4 address, else the line "*", else none (0 0). Without the file, the
// rates stay those of SOFTRDMA_LOSS and SOFTRDMA_REORDER. The receiver thread
// reads it at most every 100 ms; a malformed file changes nothing.
#include <arpa/inet.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "hw/softrdma/internal.hpp"

namespace softrdma {

namespace {

constexpr auto kCheckEvery = std::chrono::milliseconds(100);

// The rates `file` gives the device at `addr`; false, having said why once, when malformed.
bool rates_for(const char* path, std::ifstream& file, const std::string& addr, WireFaults* faults) {
  static std::atomic<bool> told{false};
  double loss = 0, reorder = 0;
  bool own = false;
  int n = 0;
  for (std::string line; std::getline(file, line);) {
    ++n;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    std::string who;
    double l = -1, r = -1;
    if (!(in >> who >> l >> r) || !(l >= 0 && l <= 1 && r >= 0 && r <= 1)) {
      if (!told.exchange(true))
        std::fprintf(stderr, "softrdma: %s line %d: want ADDRESS LOSS REORDER, rates from 0 to 1\n", path, n);
      return false;
    }
    if (who == addr || (who == "*" && !own)) {
      loss = l;
      reorder = r;
      own = who == addr;
    }
  }
  faults->loss = loss;
  faults->reorder = reorder;
  return true;
}

}  // namespace

void watch_fault_file(Context& ctx) {
  const char* path = std::getenv("SOFTRDMA_FAULT_FILE");
  if (!path || !*path) return;
  const auto now = std::chrono::steady_clock::now();
  if (now < ctx.faults_checked + kCheckEvery) return;
  ctx.faults_checked = now;
  std::ifstream file(path);
  if (!file) return;
  char addr[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &ctx.addr, addr, sizeof addr);
  WireFaults rates;
  if (!rates_for(path, file, addr, &rates)) return;
  std::lock_guard lock(ctx.faults_mu);
  ctx.faults.loss = rates.loss;
  ctx.faults.reorder = rates.reorder;
}

}  // namespace softrdma
