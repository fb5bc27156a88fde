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

#include "hw/handshake.hpp"
#include "hw/membership_proof.hpp"
#include "hw/os.hpp"
#include "hw/socket_util.hpp"
#include "hw/tcp_frame.hpp"

namespace testsupport {

namespace {

constexpr std::size_t kMaxSilent = 16;  // connections held open at once, so a run never runs out of descriptors
constexpr auto kRound = std::chrono::milliseconds(20);
// How long a replay waits for challenges: a listener not accepting yet must not stall the knocking.
constexpr double kChallengeWaitSeconds = 0.3;

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

Stranger::Stranger(std::vector<int> ports, std::function<std::vector<pid_t>()> pids, std::string secret)
    : ports_(std::move(ports)), pids_(std::move(pids)), secret_(std::move(secret)), thread_([this] { run(); }) {}

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
      "GET / HTTP/1.1\r\nHost: meshinfer\r\n\r\n" + std::string(200, '\xff');  // more than a handshake's 144 bytes
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
      switch ((turn + static_cast<unsigned>(port)) % 5) {
        case 0:  // a few bytes, then gone
          hw::send_no_sigpipe(fd, "MIH", 3);
          ::close(fd);
          break;
        case 1:
          hw::send_no_sigpipe(fd, garbage.data(), garbage.size());
          ::close(fd);
          break;
        case 2: {
          const auto header = hw::encode_tcp_header(1, engine::Payload::sized(std::uint64_t{1} << 63));
          hw::send_no_sigpipe(fd, header.data(), header.size());
          ::close(fd);
          break;
        }
        case 3:
          replay_handshake(fd, port);
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

void Stranger::replay_handshake(int first, int port) {
  const int second = connect_loopback(port);
  try {
    hw::Challenge seen, fresh;
    hw::read_exact(first, seen.data(), seen.size(), hw::deadline_in(kChallengeWaitSeconds));
    if (second < 0) throw std::runtime_error("no second connection");
    hw::read_exact(second, fresh.data(), fresh.size(), hw::deadline_in(kChallengeWaitSeconds));
    std::vector<char> answer = hw::encode_hello({1, 0, "127.0.0.1"});
    const hw::Proof recorded = hw::prove(secret_, seen, answer);
    answer.insert(answer.end(), recorded.begin(), recorded.end());
    answer.insert(answer.end(), fresh.begin(), fresh.end());  // a challenge of its own, for the listener to answer
    hw::write_exact(second, answer.data(), answer.size(), hw::deadline_in(2));
  } catch (const std::runtime_error&) {  // the listener is gone or not challenging (yet): nothing to replay
  }
  ::close(first);
  if (second >= 0) ::close(second);
}

}  // namespace testsupport
