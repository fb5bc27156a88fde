// The calls that differ between Linux and macOS, in one place. Everything else
// in hw/ and cli/ is plain POSIX: hw/banned_calls.hpp makes a direct use of a
// Linux extra fail the build. Linux keeps its extras (unless MESHINFER_POSIX_ONLY),
// macOS gets its equivalents, any other POSIX system the portable fallbacks.
#pragma once

#include <poll.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace hw {

// The platform the OS calls below were built for: "linux", "macos" or "posix".
const char* platform_name();

// A close-on-exec IPv4 TCP socket; a write to it after the peer left returns
// EPIPE instead of raising SIGPIPE (see send_no_sigpipe).
int tcp_socket();
// Accepts one connection on `listen_fd` as a close-on-exec socket; -1 and errno on failure.
int accept_cloexec(int listen_fd);
// ::send that reports a closed peer as EPIPE rather than killing the process.
ssize_t send_no_sigpipe(int fd, const void* data, std::size_t len);
// The same for `count` buffers in one call (::sendmsg, scatter-gather).
ssize_t send_no_sigpipe(int fd, const iovec* parts, std::size_t count);
// A close-on-exec pipe; throws on failure.
void pipe_cloexec(int fds[2]);
// ::poll with a timeout finer than a millisecond where the OS has one (ppoll);
// elsewhere rounded up, so it never returns before `timeout` without an event.
int poll_for(pollfd* fds, nfds_t n, std::chrono::nanoseconds timeout);

// Ends this process (SIGKILL) when the process that started it dies: a rank
// must not outlive its launcher or its ssh session.
void die_with_parent();
// Asks the OS to wake sleeping threads on time (Linux's 50 us timer slack
// down to 1 ns); a no-op where there is no such knob.
void wake_on_time();

// Keeps memory this process frees mapped (glibc: big blocks from the heap,
// which is never trimmed), so a transport's per-message buffers reuse warm
// pages instead of faulting in fresh zeroed ones; a no-op elsewhere.
void keep_freed_memory();
// Memory the OS could give this process now without swapping, in bytes
// (Linux's MemAvailable; free plus inactive pages on macOS); 0 when unknown.
std::uint64_t free_memory_bytes();

// REQUIRES: called once at startup with argv[0] (the POSIX fallback of self_executable needs it).
void record_argv0(const char* argv0);
// The absolute path of the running executable, to start more of itself.
std::string self_executable();

}  // namespace hw
