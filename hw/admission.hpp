// Who gets in during bootstrap. A dialling rank introduces itself with a
// Hello (hw/hello.hpp); the listening side admits the ranks it waits for and drops, with a
// reason, every connection that does not finish a valid Hello in time: one
// that closes early, sends garbage, stays silent or claims a rank not expected.
// Connections are served side by side, so a stranger never delays a member.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "hw/hello.hpp"
#include "hw/socket_util.hpp"

namespace hw {

// How long a connection may take to send its Hello.
inline constexpr double kHandshakeSeconds = 5;

struct Admitted {
  int fd = -1;
  Hello hello;
};

// Why a Hello is not welcome here (already joined, not a rank this side
// waits for...); empty when it is.
using HelloCheck = std::function<std::string(const Hello&)>;
// Called for each connection dropped: who it came from ("ADDRESS:PORT") and why.
using RefusedFn = std::function<void(const std::string& from, const std::string& why)>;

// Accepts on `listen_fd` until `count` connections have passed `check`, in
// the order they completed. Throws std::runtime_error at `deadline` naming
// how many are missing. The listening socket stays open.
std::vector<Admitted> admit(int listen_fd, int count, const HelloCheck& check, Deadline deadline,
                            const RefusedFn& refused);

// Dials host:port (retrying until `deadline`) and sends `me`; returns the fd.
int dial_and_introduce(const std::string& host, int port, const Hello& me, Deadline deadline);

}  // namespace hw
