#include "hw/cluster.hpp"

#include <arpa/inet.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/error.hpp"
#include "hw/verbs/verbs_frames.hpp"

namespace hw {

namespace {

using nlohmann::json;

bool is_ipv4(const std::string& s) {
  in_addr a{};
  return ::inet_pton(AF_INET, s.c_str(), &a) == 1;
}

std::string subnet24(const std::string& ip) { return ip.substr(0, ip.rfind('.')); }

ClusterHost parse_host(const json& j, const std::string& file, const std::string& path) {
  if (!j.is_object()) throw engine::InputError(file, path, "expected an object {\"ssh\": ..., \"ips\": [...]}");
  for (const auto& [key, value] : j.items())
    if (key != "ssh" && key != "ips" && key != "rdma")
      throw engine::InputError(file, path + "/" + key, "unknown key (expected ssh, ips, rdma)");
  ClusterHost h;
  if (!j.contains("ssh") || !j["ssh"].is_string() || j["ssh"].get<std::string>().empty())
    throw engine::InputError(file, path + "/ssh", "expected the host name to reach this rank by ssh");
  h.ssh = j["ssh"].get<std::string>();
  if (!j.contains("ips") || !j["ips"].is_array() || j["ips"].empty())
    throw engine::InputError(file, path + "/ips", "expected a non-empty array of IPv4 addresses");
  for (std::size_t i = 0; i < j["ips"].size(); ++i) {
    const json& ip = j["ips"][i];
    const std::string where = path + "/ips/" + std::to_string(i);
    if (!ip.is_string() || !is_ipv4(ip.get<std::string>()))
      throw engine::InputError(file, where, "not an IPv4 address: " + ip.dump());
    h.ips.push_back(ip.get<std::string>());
  }
  return h;
}

}  // namespace

std::string ClusterSpec::address(int from, int to) const {
  const auto& mine = hosts.at(from).ips;
  for (const std::string& theirs : hosts.at(to).ips)
    for (const std::string& ip : mine)
      if (subnet24(ip) == subnet24(theirs)) return theirs;
  return hosts.at(to).ips.front();
}

bool ClusterSpec::is_local(int r) const {
  const std::string& h = hosts.at(r).ssh;
  return h == "localhost" || h == "127.0.0.1";
}

ClusterSpec parse_cluster(const std::string& text, const std::string& file) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    throw engine::InputError(file, "", std::string("invalid JSON: ") + e.what());
  }
  ClusterSpec c;
  c.file = file;
  const json* hosts = &doc;
  std::string hosts_path;
  if (doc.is_object()) {
    for (const auto& [key, value] : doc.items())
      if (key != "transport" && key != "port" && key != "hosts" && key != "rdma_frame_bytes" && key != "rdma_qp")
        throw engine::InputError(file, "/" + key,
                                 "unknown key (expected transport, port, hosts, rdma_frame_bytes, rdma_qp)");
    if (doc.contains("transport")) {
      const json& t = doc["transport"];
      if (!t.is_string() || (t != "tcp" && t != "rdma"))
        throw engine::InputError(file, "/transport", "expected \"tcp\" or \"rdma\", got " + t.dump());
      c.transport = t.get<std::string>();
    }
    if (doc.contains("port")) {
      const json& p = doc["port"];
      if (!p.is_number_integer() || p.get<long>() < 1 || p.get<long>() > 65534)
        throw engine::InputError(file, "/port",
                                 "expected a TCP port in 1..65534 (heartbeats use port + 1), got " + p.dump());
      c.port = p.get<int>();
    }
    if (doc.contains("rdma_frame_bytes")) {
      const json& f = doc["rdma_frame_bytes"];
      try {
        if (!f.is_number_unsigned()) throw std::invalid_argument("expected a byte count, got " + f.dump());
        check_frame_stride(f.get<std::size_t>());
      } catch (const std::invalid_argument& e) {
        throw engine::InputError(file, "/rdma_frame_bytes", e.what());
      }
      c.rdma_frame_bytes = f.get<std::size_t>();
    }
    if (doc.contains("rdma_qp")) {
      const json& q = doc["rdma_qp"];
      if (!q.is_string() || (q != "uc" && q != "rc"))
        throw engine::InputError(file, "/rdma_qp", "expected \"uc\" (macOS) or \"rc\", got " + q.dump());
      c.rdma_qp = q.get<std::string>();
    }
    if (!doc.contains("hosts")) throw engine::InputError(file, "/hosts", "missing: the array of hosts, one per rank");
    hosts = &doc["hosts"];
    hosts_path = "/hosts";
  }
  if (!hosts->is_array() || hosts->empty())
    throw engine::InputError(file, hosts_path, "expected a non-empty array of hosts, one per rank");
  const int world = static_cast<int>(hosts->size());
  bool any_rdma = false;
  for (int r = 0; r < world; ++r) {
    const std::string path = hosts_path + "/" + std::to_string(r);
    c.hosts.push_back(parse_host((*hosts)[r], file, path));
    any_rdma = any_rdma || (*hosts)[r].contains("rdma");
  }
  if (any_rdma) {
    json rows = json::array();
    for (int r = 0; r < world; ++r) {
      if (!(*hosts)[r].contains("rdma"))
        throw engine::InputError(file, hosts_path + "/" + std::to_string(r) + "/rdma",
                                 "missing: every host needs an rdma row when one has");
      rows.push_back((*hosts)[r]["rdma"]);
    }
    c.rdma_devices =
        DeviceMatrix::parse(rows, file, [&](int r) { return hosts_path + "/" + std::to_string(r) + "/rdma"; });
  }
  return c;
}

ClusterSpec load_cluster(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw engine::InputError(path, "", "cannot open file");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_cluster(text.str(), path);
}

std::string local_cluster_json(int n, int port) {
  json hosts = json::array();
  for (int r = 0; r < n; ++r) hosts.push_back({{"ssh", "localhost"}, {"ips", {"127.0.0.1"}}});
  return json{{"transport", "tcp"}, {"port", port}, {"hosts", hosts}}.dump(2) + "\n";
}

}  // namespace hw
