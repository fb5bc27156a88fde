// Several "hosts" on this one machine: network namespaces joined in a full
// mesh of veth pairs, each pair on its own /24 (optionally shaped by a tc tbf
// qdisc on both ends). The destructor deletes every namespace it made (their
// veths go with them); the constructor first removes those a crashed earlier
// run left behind (their names carry the pid of the process that made them).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace testsupport {

class NetnsMesh {
 public:
  // Why a mesh cannot be built here ("" when it can): not root, no `ip`, no netns.
  static std::string unavailable_reason();

  // `tbf`: tc tbf parameters for every veth, e.g. "rate 100mbit burst 8kb latency 200ms"; empty: unshaped.
  NetnsMesh(int n, const std::string& tbf = "");
  ~NetnsMesh();
  NetnsMesh(const NetnsMesh&) = delete;
  NetnsMesh& operator=(const NetnsMesh&) = delete;

  std::string ns(int r) const { return prefix_ + std::to_string(r); }
  // For `launch --exec-prefix`: runs rank r inside namespace r.
  std::string exec_prefix() const { return "ip netns exec " + prefix_ + "{rank}"; }
  // The cluster file: rank r's addresses are its ends of the mesh's pairs.
  nlohmann::json cluster(int port) const;

 private:
  void teardown();

  int n_;
  std::string prefix_;
};

}  // namespace testsupport
