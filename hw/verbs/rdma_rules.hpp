// Whether a verbs stack behaves as REFERENCE.md says Apple's Thunderbolt RDMA
// does, rule by rule, observed on one device: two UC queue pairs, each on its
// own context as two processes would hold them, talk to each other. The kit a
// user runs on the real Macs (meshinfer rdma-check); doctor's bundle reuses it.
#pragma once

#include <string>
#include <vector>

#include "hw/verbs/verbs_api.hpp"

namespace hw {

enum class Verdict { kAsDocumented, kDiffers, kNotObserved };

struct RuleResult {
  std::string rule;      // "uc-only", "frame-limit", ...
  std::string expected;  // what REFERENCE.md says, in a sentence
  std::string observed;  // what the stack did
  Verdict verdict = Verdict::kNotObserved;
};

struct RuleOptions {
  // How long a frame may take to arrive before it counts as dropped.
  double wait_s = 1.0;
};

// Every rule on `device`. Rules the device cannot be brought to show (no
// ACTIVE port, no IPv4-mapped GID, a loopback pair that does not connect) are
// kNotObserved with the reason. Never throws for what the stack does.
std::vector<RuleResult> check_rdma_rules(VerbsApi& api, const std::string& device, const RuleOptions& options = {});

// "as documented", "differs", "not observed".
const char* verdict_name(Verdict v);

}  // namespace hw
