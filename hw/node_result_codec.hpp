// One node's results (its NodeResult and the events it noted) as a message,
// so the reporting rank can gather every node's part of a real run.
#pragma once

#include <vector>

#include "engine/base/events.hpp"
#include "engine/base/runtime.hpp"
#include "engine/node/run_result.hpp"

namespace hw {

struct NodeReport {
  engine::NodeResult node;
  std::vector<engine::RunEvent> events;
};

engine::Payload encode_node_report(const NodeReport& r);
// Throws std::runtime_error on a malformed message.
NodeReport decode_node_report(const engine::Payload& p);

}  // namespace hw
