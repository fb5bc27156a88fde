// Force-included (-include) before every hw/ and cli/ source except
// hw/os.cpp: a direct use of a Linux-only call or flag fails the build,
// on Linux too, so macOS never meets it first. Use hw/os.hpp instead.
// The system headers that declare them come first (poison also bites inside
// a header included later); the flags that are macros are undefined first.
#pragma once

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#undef MSG_NOSIGNAL
#undef SOCK_CLOEXEC
#undef SOCK_NONBLOCK
#undef TCP_KEEPIDLE
#pragma GCC poison accept4 pipe2 ppoll prctl epoll_create epoll_create1 eventfd signalfd timerfd_create
#pragma GCC poison MSG_NOSIGNAL SOCK_CLOEXEC SOCK_NONBLOCK TCP_KEEPIDLE
