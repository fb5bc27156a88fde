// The one file allowed the Linux extras (see hw/banned_calls.hpp): each has a
// macOS equivalent where one exists and a portable POSIX fallback.
#include "hw/os.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

#if defined(__linux__) && !defined(MESHINFER_POSIX_ONLY)
#define MESHINFER_LINUX 1
#include <malloc.h>
#include <sys/prctl.h>
#elif defined(__APPLE__)
#include <mach-o/dyld.h>
#include <mach/mach.h>
#endif

namespace hw {

namespace {

std::string g_argv0_path;  // record_argv0's resolution, for the POSIX self_executable

[[noreturn]] void sys_fail(const std::string& what) { throw std::runtime_error(what + ": " + std::strerror(errno)); }

#ifndef MESHINFER_LINUX
void set_cloexec(int fd) { ::fcntl(fd, F_SETFD, ::fcntl(fd, F_GETFD) | FD_CLOEXEC); }

// macOS asks per socket (SO_NOSIGPIPE); a system with neither that nor
// MSG_NOSIGNAL ignores SIGPIPE for the whole process (children get it back: launcher).
void no_sigpipe(int fd) {
#ifdef SO_NOSIGPIPE
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof one);
#else
  (void)fd;
  static std::once_flag once;
  std::call_once(once, [] { ::signal(SIGPIPE, SIG_IGN); });
#endif
}
#endif

}  // namespace

const char* platform_name() {
#if defined(MESHINFER_LINUX)
  return "linux";
#elif defined(__APPLE__)
  return "macos";
#else
  return "posix";
#endif
}

int tcp_socket() {
#ifdef MESHINFER_LINUX
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) sys_fail("socket");
#else
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) sys_fail("socket");
  set_cloexec(fd);
  no_sigpipe(fd);
#endif
  return fd;
}

int accept_cloexec(int listen_fd) {
#ifdef MESHINFER_LINUX
  return ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
#else
  const int fd = ::accept(listen_fd, nullptr, nullptr);
  if (fd >= 0) {
    set_cloexec(fd);
    no_sigpipe(fd);
  }
  return fd;
#endif
}

ssize_t send_no_sigpipe(int fd, const void* data, std::size_t len) {
  const iovec part{const_cast<void*>(data), len};
  return send_no_sigpipe(fd, &part, 1);
}

ssize_t send_no_sigpipe(int fd, const iovec* parts, std::size_t count) {
  msghdr message{};
  message.msg_iov = const_cast<iovec*>(parts);
  message.msg_iovlen = count;
#ifdef MESHINFER_LINUX
  return ::sendmsg(fd, &message, MSG_NOSIGNAL);
#else
  return ::sendmsg(fd, &message, 0);  // the socket itself was made quiet: no_sigpipe
#endif
}

void pipe_cloexec(int fds[2]) {
#ifdef MESHINFER_LINUX
  if (::pipe2(fds, O_CLOEXEC) != 0) sys_fail("pipe2");
#else
  if (::pipe(fds) != 0) sys_fail("pipe");
  set_cloexec(fds[0]);
  set_cloexec(fds[1]);
#endif
}

int poll_for(pollfd* fds, nfds_t n, std::chrono::nanoseconds timeout) {
  if (timeout.count() < 0) timeout = std::chrono::nanoseconds(0);
#ifdef MESHINFER_LINUX
  const timespec ts{static_cast<time_t>(timeout.count() / 1000000000), static_cast<long>(timeout.count() % 1000000000)};
  return ::ppoll(fds, n, &ts, nullptr);
#else
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(timeout).count();
  return ::poll(fds, n, static_cast<int>(std::min<long long>(ms, INT_MAX)));
#endif
}

void die_with_parent() {
#ifdef MESHINFER_LINUX
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
#else
  // No parent-death signal: watch the parent. When it dies this process is
  // re-parented, so getppid() changes.
  const pid_t parent = ::getppid();
  std::thread([parent] {
    while (::getppid() == parent) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ::kill(::getpid(), SIGKILL);
  }).detach();
#endif
}

void wake_on_time() {
#ifdef MESHINFER_LINUX
  ::prctl(PR_SET_TIMERSLACK, 1);
#endif
}

void keep_freed_memory() {
#if defined(MESHINFER_LINUX) && defined(__GLIBC__)
  ::mallopt(M_MMAP_THRESHOLD, 1 << 30);  // the largest glibc takes; also ends its adaptive threshold
  ::mallopt(M_TRIM_THRESHOLD, INT_MAX);
#endif
}

std::uint64_t free_memory_bytes() {
#if defined(MESHINFER_LINUX)
  std::ifstream meminfo("/proc/meminfo");
  for (std::string key; meminfo >> key;) {
    std::uint64_t kib = 0;
    if (meminfo >> kib && key == "MemAvailable:") return kib * 1024;
    meminfo.ignore(256, '\n');
  }
  return 0;
#elif defined(__APPLE__)
  vm_statistics64_data_t vm{};
  mach_msg_type_number_t count = HOST_VM_INFO64_COUNT;
  if (::host_statistics64(::mach_host_self(), HOST_VM_INFO64, reinterpret_cast<host_info64_t>(&vm), &count) !=
      KERN_SUCCESS)
    return 0;
  return (static_cast<std::uint64_t>(vm.free_count) + vm.inactive_count) * vm_page_size;
#elif defined(_SC_AVPHYS_PAGES)
  return static_cast<std::uint64_t>(::sysconf(_SC_AVPHYS_PAGES)) * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
#else
  return 0;
#endif
}

void record_argv0(const char* argv0) {
  std::string path = argv0 ? argv0 : "";
  if (path.find('/') == std::string::npos) {  // run from PATH, as execvp found it
    std::istringstream dirs(std::getenv("PATH") ? std::getenv("PATH") : "");
    for (std::string dir; std::getline(dirs, dir, ':');)
      if (::access((dir + "/" + path).c_str(), X_OK) == 0) {
        path = dir + "/" + path;
        break;
      }
  }
  std::error_code ec;
  g_argv0_path = std::filesystem::canonical(path, ec).string();
}

std::string self_executable() {
#if defined(MESHINFER_LINUX)
  return std::filesystem::read_symlink("/proc/self/exe").string();
#elif defined(__APPLE__)
  char buf[PATH_MAX];
  uint32_t size = sizeof buf;
  if (::_NSGetExecutablePath(buf, &size) != 0) throw std::runtime_error("_NSGetExecutablePath: path too long");
  return std::filesystem::canonical(buf).string();
#else
  if (g_argv0_path.empty()) throw std::runtime_error("the executable's path is unknown (record_argv0 not called)");
  return g_argv0_path;
#endif
}

}  // namespace hw
