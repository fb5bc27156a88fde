#include "hw/netns_mesh.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "hw/os.hpp"
#include "hw/shell.hpp"

namespace hw {

namespace {

constexpr const char* kNamePrefix = "mi";  // mi<pid>n<rank>

// The address of rank `r` on the /24 of pair (a, b).
std::string address(int a, int b, int n, int r) {
  const int pair = a * n + b;
  return "10.99." + std::to_string(pair) + "." + std::to_string(r + 1);
}

// The veth in rank r's namespace that leads to rank `to`: named for the far end.
std::string veth(int to) { return "v" + std::to_string(to); }

// Rank r's port on the secondary network, its far end in the switch, and its address.
constexpr const char* kSecondaryPort = "s0";
std::string switch_port(int r) { return "p" + std::to_string(r); }
std::string secondary_address(int r) { return "10.98.0." + std::to_string(r + 1); }

void shape(const std::string& ns, const std::string& dev, const std::string& tbf) {
  const std::string tc = "ip netns exec " + ns + " tc qdisc ";
  run_shell(tc + "del dev " + dev + " root 2>/dev/null");  // none yet is fine
  if (!tbf.empty()) run_shell_or_throw(tc + "add dev " + dev + " root tbf " + tbf);
}

// Every CPU this machine runs, as sysfs writes a cpumask: 32-bit hex groups, most significant first.
std::string all_cpus_mask() {
  std::string mask;
  for (int left = static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); left > 0; left -= 32) {
    const std::uint32_t group = left >= 32 ? 0xffffffffu : (1u << left) - 1;
    mask = fmt::format("{:x}", group) + (mask.empty() ? "" : "," + mask);
  }
  return mask;
}

// A veth hands each packet to the backlog of the CPU that sent it, so two CPUs
// can deliver one flow out of order, which a cable never does (and UC then loses
// the message: softrdma's frames arrived reordered on an idle machine). Receive
// packet steering queues each flow on one CPU, in order.
void keep_flows_in_order(const std::string& ns, const std::string& dev) {
  run_shell_or_throw("ip netns exec " + ns + " sh -c 'echo " + all_cpus_mask() + " > /sys/class/net/" + dev +
                     "/queues/rx-0/rps_cpus'");
}

bool owner_gone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

void remove_leftovers() {
  const std::regex ours(std::string("^") + kNamePrefix + R"((\d+)n\d+)");
  std::istringstream list(run_shell("ip netns list 2>/dev/null").output);
  for (std::string line; std::getline(list, line);) {
    std::smatch m;
    if (std::regex_search(line, m, ours) && owner_gone(static_cast<pid_t>(std::stol(m[1]))))
      run_shell("ip netns del " + m[0].str() + " 2>/dev/null");
  }
}

// A veth's operational state (IFF_RUNNING, which an RDMA port's state follows)
// turns UP up to a second after both ends are set up: the kernel's link watch
// is rate-limited. A mesh is handed out only once every port is running.
void wait_until_running(const std::string& ns) {
  run_shell_or_throw("for i in $(seq 250); do ip -n " + ns +
                     " -o link show type veth | grep -qv 'state UP' || exit 0; sleep 0.02; done; exit 1");
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

NetnsMesh::NetnsMesh(int n, const std::string& tbf, const std::optional<std::string>& secondary_tbf)
    : n_(n), secondary_(secondary_tbf.has_value()), prefix_(kNamePrefix + std::to_string(::getpid()) + "n") {
  remove_leftovers();
  start_guard();
  try {
    for (int r = 0; r < namespaces(); ++r) {
      run_shell_or_throw("ip netns add " + ns(r));
      run_shell_or_throw("ip -n " + ns(r) + " link set lo up");
    }
    for (int a = 0; a < n; ++a) {
      for (int b = a + 1; b < n; ++b) {
        run_shell_or_throw("ip -n " + ns(a) + " link add name " + veth(b) + " type veth peer name " + veth(a) +
                           " netns " + ns(b));
        for (const auto& [r, far] : {std::pair{a, b}, std::pair{b, a}}) {
          run_shell_or_throw("ip -n " + ns(r) + " addr add " + address(a, b, n, r) + "/24 dev " + veth(far));
          keep_flows_in_order(ns(r), veth(far));
          run_shell_or_throw("ip -n " + ns(r) + " link set " + veth(far) + " up");
        }
        if (!tbf.empty()) shape_link(a, b, tbf);
      }
    }
    if (secondary_) add_secondary_network(*secondary_tbf);
    for (int r = 0; r < namespaces(); ++r) wait_until_running(ns(r));
  } catch (...) {
    teardown();  // no destructor runs for a constructor that threw
    throw;
  }
}

NetnsMesh::~NetnsMesh() { teardown(); }

void NetnsMesh::add_secondary_network(const std::string& tbf) {
  const std::string sw = ns(n_);
  run_shell_or_throw("ip -n " + sw + " link add br0 type bridge");
  run_shell_or_throw("ip -n " + sw + " link set br0 up");
  for (int r = 0; r < n_; ++r) {
    run_shell_or_throw("ip -n " + ns(r) + " link add name " + kSecondaryPort + " type veth peer name " +
                       switch_port(r) + " netns " + sw);
    run_shell_or_throw("ip -n " + sw + " link set " + switch_port(r) + " master br0 up");
    run_shell_or_throw("ip -n " + ns(r) + " addr add " + secondary_address(r) + "/24 dev " + kSecondaryPort);
    keep_flows_in_order(ns(r), kSecondaryPort);
    run_shell_or_throw("ip -n " + ns(r) + " link set " + kSecondaryPort + " up");
    // Both ways, as a full-duplex NIC: what the node sends, and what the switch sends it.
    shape(ns(r), kSecondaryPort, tbf);
    shape(sw, switch_port(r), tbf);
  }
}

// A shell in its own process group (a Ctrl-C meant for us does not reach it)
// that waits for EOF on a pipe only we hold, then deletes the namespaces: our
// death, however it comes, closes the pipe. Built before fork, so the child
// only makes async-signal-safe calls.
void NetnsMesh::start_guard() {
  std::string script = "read _; ";
  for (int r = 0; r < namespaces(); ++r) script += "ip netns del " + ns(r) + " 2>/dev/null; ";
  int fds[2];
  pipe_cloexec(fds);
  const int null_fd = ::open("/dev/null", O_RDWR);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(fds[0], STDIN_FILENO);
    ::dup2(null_fd, STDOUT_FILENO);
    ::dup2(null_fd, STDERR_FILENO);
    for (int fd = 3; fd < 1024; ++fd) ::close(fd);
    ::execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(null_fd);
  ::close(fds[0]);
  guard_ = pid;
  guard_fd_ = fds[1];
}

void NetnsMesh::teardown() {
  for (int r = 0; r < namespaces(); ++r) run_shell("ip netns del " + ns(r) + " 2>/dev/null");
  if (guard_fd_ >= 0) ::close(guard_fd_);
  if (guard_ > 0) ::waitpid(guard_, nullptr, 0);
  guard_fd_ = -1;
  guard_ = -1;
}

nlohmann::json NetnsMesh::cluster(int port, bool rdma) const {
  nlohmann::json hosts = nlohmann::json::array();
  for (int r = 0; r < n_; ++r) {
    nlohmann::json ips = nlohmann::json::array(), devices = nlohmann::json::array();
    for (int k = 0; k < n_; ++k) {
      if (k != r) ips.push_back(address_towards(r, k));
      devices.push_back(k == r ? nlohmann::json() : nlohmann::json("rdma_" + veth(k)));
    }
    hosts.push_back({{"ssh", "localhost"}, {"ips", ips}});
    if (rdma) hosts.back()["rdma"] = devices;
    if (secondary_) hosts.back()["secondary_ip"] = secondary_address(r);
  }
  return {{"transport", rdma ? "rdma" : "tcp"}, {"port", port}, {"hosts", hosts}};
}

std::string NetnsMesh::address_towards(int r, int k) const { return address(std::min(r, k), std::max(r, k), n_, r); }

void NetnsMesh::set_link_up(int a, int b, bool up) {
  for (const auto& [r, far] : {std::pair{a, b}, std::pair{b, a}})
    run_shell_or_throw("ip -n " + ns(r) + " link set " + veth(far) + (up ? " up" : " down"));
}

void NetnsMesh::shape_link(int a, int b, const std::string& tbf) {
  for (const auto& [r, far] : {std::pair{a, b}, std::pair{b, a}}) shape(ns(r), veth(far), tbf);
}

void NetnsMesh::set_secondary_port_up(int r, bool up) {
  if (secondary_) run_shell_or_throw("ip -n " + ns(r) + " link set " + kSecondaryPort + (up ? " up" : " down"));
}

}  // namespace hw
