#include "hw/doctor/gather.hpp"

#include <optional>

#include "hw/doctor/parsers.hpp"
#include "hw/os.hpp"
#include "hw/shell.hpp"

namespace hw::doctor {

namespace {

// What `command` printed on stdout, or nullopt when it could not run or failed.
std::optional<std::string> output_of(const std::string& command) {
  const ShellResult r = run_shell(command + " 2>/dev/null");
  return r.exit_code == 0 ? std::optional(r.output) : std::nullopt;
}

bool have(const std::string& tool) { return output_of("command -v " + tool).has_value(); }

// The first line `command` printed, or "" when it could not run or failed.
std::string first_line_of(const std::string& command) {
  const auto said = output_of(command);
  return said ? said->substr(0, said->find('\n')) : "";
}

// `uname -srm`, then what macOS adds: its version and the chip (an M3 Ultra's card is not an M4 Max's).
std::string system_line() {
  std::string line = first_line_of("uname -srm");
  if (const std::string v = first_line_of("sw_vers -productVersion"); !v.empty()) line += "; macOS " + v;
  if (const std::string chip = first_line_of("sysctl -n machdep.cpu.brand_string"); !chip.empty()) line += "; " + chip;
  return line;
}

}  // namespace

HostFacts gather_host_facts(const std::string& version) {
  HostFacts f;
  f.version = version;
  f.system = system_line();
  if (const auto ip = output_of("ip -j -d addr show")) {
    f.ports = parse_ip_addr_json(*ip);
  } else if (const auto ifc = output_of("ifconfig -a")) {
    f.ports = parse_ifconfig(*ifc);
    if (const auto hw_ports = output_of("networksetup -listallhardwareports")) apply_hardware_ports(*hw_ports, f.ports);
  } else {
    f.notes.push_back("neither `ip` (iproute2) nor `ifconfig` runs here: no network ports listed");
  }
  if (const auto tb = output_of("system_profiler SPThunderboltDataType")) f.thunderbolt = parse_thunderbolt(*tb);
  if (have("ibv_devinfo")) {
    if (const auto dev = output_of("ibv_devinfo -v")) f.rdma = parse_ibv_devinfo(*dev);
  } else {
    f.notes.push_back("ibv_devinfo is not installed (rdma-core's ibverbs-utils): no RDMA devices listed");
  }
  f.free_memory_bytes = static_cast<double>(free_memory_bytes());
  return f;
}

}  // namespace hw::doctor
