#include "hw/softrdma/interfaces.hpp"

#include <ifaddrs.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace softrdma {

namespace {

int interface_mtu(const std::string& name) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 1500;
  ifreq req{};
  std::strncpy(req.ifr_name, name.c_str(), IFNAMSIZ - 1);
  const int mtu = ioctl(fd, SIOCGIFMTU, &req) == 0 ? req.ifr_mtu : 1500;
  close(fd);
  return mtu;
}

}  // namespace

std::vector<Interface> ipv4_interfaces() {
  std::vector<Interface> found;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return found;
  for (ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET) continue;
    bool seen = false;
    for (const Interface& i : found) seen = seen || i.name == a->ifa_name;
    if (seen) continue;
    Interface i;
    i.name = a->ifa_name;
    i.addr = reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr;
    i.running = (a->ifa_flags & IFF_UP) && (a->ifa_flags & IFF_RUNNING);
    i.mtu = interface_mtu(i.name);
    i.index = if_nametoindex(a->ifa_name);
    found.push_back(i);
  }
  freeifaddrs(list);
  return found;
}

std::optional<Interface> find_interface(const std::string& name) {
  for (const Interface& i : ipv4_interfaces())
    if (i.name == name) return i;
  return std::nullopt;
}

ibv_mtu ib_mtu_for(int if_mtu) {
  constexpr int kOverhead = 20 + 8 + 32;  // IPv4, UDP, softrdma's packet header (rounded up)
  for (ibv_mtu m : {IBV_MTU_4096, IBV_MTU_2048, IBV_MTU_1024, IBV_MTU_512})
    if ((128 << m) + kOverhead <= if_mtu) return m;
  return IBV_MTU_256;
}

}  // namespace softrdma
