#include "support/netns_mesh.hpp"

#include <unistd.h>

#include <regex>
#include <sstream>
#include <stdexcept>

#include "support/child_process.hpp"
#include "support/cli_runner.hpp"

namespace testsupport {

namespace {

constexpr const char* kNamePrefix = "mi";  // mi<pid>n<rank>

void must(const std::string& command) {
  const CliResult r = run_shell(command + " 2>&1");
  if (r.exit_code != 0) throw std::runtime_error(command + " failed: " + r.output);
}

// The address of rank `r` on the /24 of pair (a, b).
std::string address(int a, int b, int n, int r) {
  const int pair = a * n + b;
  return "10.99." + std::to_string(pair) + "." + std::to_string(r + 1);
}

void remove_leftovers() {
  const std::regex ours(std::string("^") + kNamePrefix + R"((\d+)n\d+)");
  std::istringstream list(run_shell("ip netns list 2>/dev/null").output);
  for (std::string line; std::getline(list, line);) {
    std::smatch m;
    if (std::regex_search(line, m, ours) && process_gone(static_cast<pid_t>(std::stol(m[1]))))
      run_shell("ip netns del " + m[0].str() + " 2>/dev/null");
  }
}

}  // namespace

std::string NetnsMesh::unavailable_reason() {
  if (::geteuid() != 0) return "needs root to create network namespaces";
  if (run_shell("command -v ip >/dev/null && command -v tc >/dev/null").exit_code != 0)
    return "needs ip and tc (iproute2)";
  const std::string probe = std::string(kNamePrefix) + std::to_string(::getpid()) + "probe";
  if (run_shell("ip netns add " + probe + " 2>/dev/null && ip netns del " + probe).exit_code != 0)
    return "cannot create network namespaces here";
  return "";
}

NetnsMesh::NetnsMesh(int n, const std::string& tbf) : n_(n), prefix_(kNamePrefix + std::to_string(::getpid()) + "n") {
  remove_leftovers();
  try {
    for (int r = 0; r < n; ++r) {
      must("ip netns add " + ns(r));
      must("ip -n " + ns(r) + " link set lo up");
    }
    for (int a = 0; a < n; ++a) {
      for (int b = a + 1; b < n; ++b) {
        const std::string va = "v" + std::to_string(b), vb = "v" + std::to_string(a);  // named for the far end
        must("ip -n " + ns(a) + " link add name " + va + " type veth peer name " + vb + " netns " + ns(b));
        for (const auto& [r, dev] : {std::pair{a, va}, std::pair{b, vb}}) {
          must("ip -n " + ns(r) + " addr add " + address(a, b, n, r) + "/24 dev " + dev);
          must("ip -n " + ns(r) + " link set " + dev + " up");
          if (!tbf.empty()) must("ip netns exec " + ns(r) + " tc qdisc add dev " + dev + " root tbf " + tbf);
        }
      }
    }
  } catch (...) {
    teardown();  // no destructor runs for a constructor that threw
    throw;
  }
}

NetnsMesh::~NetnsMesh() { teardown(); }

void NetnsMesh::teardown() {
  for (int r = 0; r < n_; ++r) run_shell("ip netns del " + ns(r) + " 2>/dev/null");
}

nlohmann::json NetnsMesh::cluster(int port) const {
  nlohmann::json hosts = nlohmann::json::array();
  for (int r = 0; r < n_; ++r) {
    nlohmann::json ips = nlohmann::json::array();
    for (int k = 0; k < n_; ++k)
      if (k != r) ips.push_back(address(std::min(r, k), std::max(r, k), n_, r));
    hosts.push_back({{"ssh", "localhost"}, {"ips", ips}});
  }
  return {{"transport", "tcp"}, {"port", port}, {"hosts", hosts}};
}

}  // namespace testsupport
