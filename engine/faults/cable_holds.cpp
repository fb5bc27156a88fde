#include "engine/faults/cable_holds.hpp"

namespace engine {

bool CableHolds::change(const std::string& cable, Change c, bool rdma) {
  int& holds = holds_[cable];
  if (c == Change::kHold) ++holds;
  if (c == Change::kRelease && holds > 0) --holds;
  if (c == Change::kReplug) holds = 0;
  return holds == 0 && !(rdma && rdma_failed_);
}

}  // namespace engine
