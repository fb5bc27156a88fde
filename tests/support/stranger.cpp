#include "support/stranger.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "hw/platform.hpp"

namespace testsupport {

namespace {

constexpr std::size_t kMaxSilent = 16;  // connections held open at once, so a run never runs out of descriptors
constexpr auto kRound = std::chrono::milliseconds(20);

int connect_loopback(int port) {
  const int fd = hw::tcp_socket();
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) return fd;
  ::close(fd);
  return -1;
}

}  // namespace

std::vector<int> listening_ports(pid_t pid) {
  std::set<std::string> inodes;
  std::error_code ec;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    const std::string target = std::filesystem::read_symlink(fd.path(), ec).string();
    if (!ec && target.rfind("socket:[", 0) == 0) inodes.insert(target.substr(8, target.size() - 9));
  }
  std::vector<int> ports;
  std::ifstream table("/proc/net/tcp");
  std::string line;
  std::getline(table, line);  // the header
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
    fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
    if (state == "0A" && inodes.contains(inode))
      ports.push_back(std::stoi(local.substr(local.find(':') + 1), nullptr, 16));
  }
  return ports;
}

Stranger::Stranger(std::vector<int> ports, std::function<std::vector<pid_t>()> pids)
    : ports_(std::move(ports)), pids_(std::move(pids)), thread_([this] { run(); }) {}

Stranger::~Stranger() {
  stop_ = true;
  thread_.join();
}

std::vector<int> Stranger::ports_reached() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reached_;
}

void Stranger::run() {
  static const std::string garbage =
      "GET / HTTP/1.1\r\nHost: meshinfer\r\n\r\n" + std::string(80, '\xff');  // more than a handshake's bytes
  std::deque<int> silent;
  for (unsigned turn = 0; !stop_; ++turn) {
    std::vector<int> ports = ports_;
    for (pid_t pid : pids_())
      for (int p : listening_ports(pid)) ports.push_back(p);
    for (int port : ports) {
      const int fd = connect_loopback(port);
      if (fd < 0) continue;
      ++connections_;
      {
        std::lock_guard<std::mutex> lock(mu_);
        reached_.push_back(port);
      }
      switch ((turn + static_cast<unsigned>(port)) % 3) {
        case 0:  // a few bytes, then gone
          hw::send_no_sigpipe(fd, "MIH", 3);
          ::close(fd);
          break;
        case 1:
          hw::send_no_sigpipe(fd, garbage.data(), garbage.size());
          ::close(fd);
          break;
        default:
          silent.push_back(fd);
          if (silent.size() > kMaxSilent) {
            ::close(silent.front());
            silent.pop_front();
          }
      }
    }
    std::this_thread::sleep_for(kRound);
  }
  for (int fd : silent) ::close(fd);
}

}  // namespace testsupport
