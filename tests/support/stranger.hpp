// A stranger on loopback: a thread that keeps connecting to the ports it is
// given and to every port the given processes listen on, and misbehaves in
// turn: sends a few bytes and closes, sends garbage, connects and stays
// silent, sends a frame header claiming 2^63 bytes, or replays a handshake
// (a proof made for one connection's challenge, sent on another). It stops
// (closing what it holds) when destroyed.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace testsupport {

// The TCP ports (IPv4) the process `pid` is listening on; empty where the OS
// does not show them (no /proc/net/tcp).
std::vector<int> listening_ports(pid_t pid);

class Stranger {
 public:
  // `pids()` is asked each round for the processes whose listening ports to visit too.
  // `secret`: the cluster's, to replay a proof a member could have sent (the
  // stranger never answers its own challenge with it).
  Stranger(std::vector<int> ports, std::function<std::vector<pid_t>()> pids, std::string secret = "");
  ~Stranger();
  Stranger(const Stranger&) = delete;
  Stranger& operator=(const Stranger&) = delete;

  // Connections that were accepted by the kernel so far, and the ports they went to.
  int connections() const { return connections_; }
  std::vector<int> ports_reached() const;

 private:
  void run();
  // Answers a challenge on a second connection to `port` with a proof made for the challenge on `first`.
  void replay_handshake(int first, int port);

  std::vector<int> ports_;
  std::function<std::vector<pid_t>()> pids_;
  std::string secret_;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  mutable std::mutex mu_;
  std::vector<int> reached_;
  std::thread thread_;
};

}  // namespace testsupport
