// Who gets in during bootstrap. The listening side sends each connection a
// fresh challenge; a dialling rank answers with its Hello (hw/handshake.hpp), the
// proof that it holds the cluster's secret and a challenge of its own, which
// the listener answers once it has admitted it (hw/membership_proof.hpp).
// The listener admits the ranks it waits for and drops, with a reason, every
// connection that does not answer well in time: one that closes early, sends
// garbage or a wrong (or replayed) proof, stays silent, or claims a rank not
// expected. Connections are served side by side, so a stranger never delays a member.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "hw/handshake.hpp"
#include "hw/socket_util.hpp"

namespace hw {

// How long a connection may take to answer its challenge.
inline constexpr double kHandshakeSeconds = 5;

struct Admitted {
  int fd = -1;
  Hello hello;
};

// Why a Hello is not welcome here (not a rank this side waits for...); empty when it is.
using HelloCheck = std::function<std::string(const Hello&)>;
// Called for each connection dropped: who it came from ("ADDRESS:PORT") and why.
using RefusedFn = std::function<void(const std::string& from, const std::string& why)>;

// Accepts on every one of `listen_fds` until `count` connections have proved
// membership under `secret` and passed `check`, in the order they completed.
// Throws std::runtime_error at `deadline` naming how many are missing. The
// listening sockets stay open.
std::vector<Admitted> admit(const std::vector<int>& listen_fds, const std::string& secret, int count,
                            const HelloCheck& check, Deadline deadline, const RefusedFn& refused);

// Dials host:port (retrying until `deadline`), answers the challenge as `me`
// under `secret` and has the listener answer one in turn; returns the fd.
// Throws std::runtime_error naming host:port when the listener's answer is wrong.
int dial_and_introduce(const std::string& host, int port, const Hello& me, const std::string& secret,
                       Deadline deadline);

}  // namespace hw
