// Whether a verbs stack behaves as Apple's Thunderbolt RDMA does by its
// documented rules (docs/reference-facts.md#macos-rdma-over-thunderbolt), rule
// by rule, observed on one device: two UC queue pairs, each on its
// own context as two processes would hold them, talk to each other. The kit a
// user runs on the real Macs (meshinfer rdma-check); doctor's bundle reuses it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "hw/verbs/rule_kit.hpp"
#include "hw/verbs/verbs_api.hpp"

namespace hw {

enum class Verdict { kAsDocumented, kDiffers, kNotObserved };

struct RuleResult {
  std::string rule;      // "uc-only", "frame-limit", ...
  std::string expected;  // what the documented rules say, in a sentence
  std::string observed;  // what the stack did
  Verdict verdict = Verdict::kNotObserved;
};

struct RuleOptions {
  // How long a frame may take to arrive before it counts as dropped.
  double wait_s = 1.0;
};

// Where the rules that send frames (send-recv-only, mtu, frame-limit) send
// them from end a to end b: two queue pairs on one device (the loopback
// pair), or the two ends of a cable between hosts (hw/verbs/cable_path.hpp).
class FramePath {
 public:
  virtual ~FramePath() = default;
  // The MTU both ends are active at.
  virtual ibv_mtu active_mtu() const = 0;
  // One frame of `bytes` as `op`, end a at path MTU a_mtu, end b at b_mtu.
  virtual Delivery send(std::size_t bytes, ibv_mtu a_mtu, ibv_mtu b_mtu, ibv_wr_opcode op) = 0;
  // Why no frame could be observed at all ("" when they could): the rules
  // that sent them are then "not observed", with this reason.
  virtual std::string unobservable() const { return ""; }
};

// Every rule on `device`; the frames across `across` when given, else across
// the loopback pair. Rules the device cannot be brought to show (no ACTIVE
// port, no IPv4-mapped GID, a loopback pair that does not connect) are
// kNotObserved with the reason. Never throws for what the stack does.
std::vector<RuleResult> check_rdma_rules(VerbsApi& api, const std::string& device, const RuleOptions& options = {},
                                         FramePath* across = nullptr);

// "as documented", "differs", "not observed".
const char* verdict_name(Verdict v);

}  // namespace hw
