// What `meshinfer doctor` learns from one host: its meshinfer version, network
// ports and their addresses, RDMA devices, free memory. Each host gathers its own
// (`meshinfer doctor --facts`, run over ssh) and prints them as JSON; the checks
// (hw/doctor/*_check) then judge every host's facts together.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hw::doctor {

struct Ipv4 {
  std::string address;  // dotted quad
  int prefix = 32;      // netmask length
};

struct NetPort {
  std::string name;        // en3, veth0, ...
  bool up = false;         // configured up
  bool carrier = false;    // something at the other end of the cable
  std::vector<Ipv4> ipv4;  // in the order the OS lists them
  std::string bridge;      // the bridge this port is a member of ("" when none)
  std::string hardware;    // what the OS calls the port ("Thunderbolt 1"; "" when unknown)

  bool is_thunderbolt() const { return hardware.starts_with("Thunderbolt") && hardware != "Thunderbolt Bridge"; }
};

struct RdmaPort {
  std::string device;  // rdma_en3, rxe0, ...
  int port = 1;
  bool active = false;  // PORT_ACTIVE
  int active_mtu = 0;   // bytes
  std::vector<std::string> gids;
  // The IPv4 address of the port's IPv4-mapped GID (::ffff:a.b.c.d), "" when it has none.
  std::string ipv4_gid() const;
};

struct ThunderboltLink {  // one receptacle, from system_profiler (macOS only)
  int receptacle = 0;
  bool connected = false;
  double speed_gbps = 0;  // the link's "Up to N Gb/s"
};

struct HostFacts {
  std::string version;  // `meshinfer --version`
  std::string system;   // OS, release, architecture and, on macOS, its version and chip
  std::vector<NetPort> ports;
  std::vector<RdmaPort> rdma;
  std::vector<ThunderboltLink> thunderbolt;
  double free_memory_bytes = 0;
  std::vector<std::string> notes;  // what could not be gathered, and why

  const NetPort* port_with(const std::string& ipv4) const;
  const RdmaPort* rdma_device(const std::string& name) const;
};

nlohmann::json to_json(const HostFacts& f);
// Throws std::runtime_error when `j` is not what to_json writes.
HostFacts facts_from_json(const nlohmann::json& j);

}  // namespace hw::doctor
