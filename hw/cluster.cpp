#include "hw/cluster.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <poll.h>
#include <unistd.h>

#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "engine/base/error.hpp"
#include "engine/base/json_input.hpp"
#include "hw/membership_proof.hpp"
#include "hw/os.hpp"
#include "hw/verbs/verbs_frames.hpp"

namespace hw {

namespace {

using nlohmann::json;

constexpr std::string_view kTransports[] = {"tcp", "rdma"};
constexpr std::string_view kQpTypes[] = {"uc", "rc"};
constexpr std::size_t kMinSecretChars = 32;
constexpr int kSecretWaitSeconds = 10;

bool is_ipv4(const std::string& s) {
  in_addr a{};
  return ::inet_pton(AF_INET, s.c_str(), &a) == 1;
}

std::string subnet24(const std::string& ip) { return ip.substr(0, ip.rfind('.')); }

ClusterHost parse_host(const engine::JsonValue& v) {
  engine::JsonObject o(v);
  o.only({"ssh", "ips", "rdma", "secondary_ip"});
  ClusterHost h;
  const engine::JsonValue ssh = o.need("ssh");
  h.ssh = ssh.as<std::string>();
  if (h.ssh.empty()) ssh.fail("must name the host that reaches this rank by ssh");
  const engine::JsonValue ips = o.need("ips");
  for (const engine::JsonValue& ip : ips.elements()) {
    h.ips.push_back(ip.as<std::string>());
    if (!is_ipv4(h.ips.back())) ip.fail("not an IPv4 address: " + h.ips.back());
  }
  if (h.ips.empty()) ips.fail("must be a non-empty array of IPv4 addresses");
  if (auto second = o.find("secondary_ip")) {
    h.secondary_ip = second->as<std::string>();
    if (!is_ipv4(h.secondary_ip)) second->fail("not an IPv4 address: " + h.secondary_ip);
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

std::string ClusterSpec::describe_transport() const {
  std::set<std::string> addresses;
  for (const ClusterHost& h : hosts) addresses.insert(h.ips.empty() ? h.ssh : h.ips.front());
  const std::string where = addresses.size() == 1 ? *addresses.begin() : fmt::format("{} hosts", addresses.size());
  const std::string how = transport == "rdma"
                              ? fmt::format("rdma ({}, {}-byte frames; tcp side channel)", rdma_qp, rdma_frame_bytes)
                              : transport;
  return fmt::format("{} between {} ranks on {}", how, world(), where);
}

ClusterSpec parse_cluster(const std::string& text, const std::string& file) {
  const json doc = engine::parse_json(text, file);
  ClusterSpec c;
  c.file = file;
  engine::JsonValue hosts(doc, "", file);
  if (doc.is_object()) {
    engine::JsonObject o(hosts);
    o.only({"transport", "port", "hosts", "rdma_frame_bytes", "rdma_qp", "secret"});
    if (auto t = o.find("transport")) c.transport = engine::choice(*t, "transport", kTransports);
    if (auto p = o.find("port")) {
      c.port = p->as<int>();
      if (c.port < 1 || c.port > 65534)
        p->fail(fmt::format("must be a TCP port in 1..65534 (heartbeats use port + 1), got {}", c.port));
    }
    if (auto f = o.find("rdma_frame_bytes")) {
      c.rdma_frame_bytes = f->as<std::size_t>();
      try {
        check_frame_stride(c.rdma_frame_bytes);
      } catch (const std::invalid_argument& e) {
        f->fail(e.what());
      }
    }
    if (auto q = o.find("rdma_qp")) c.rdma_qp = engine::choice(*q, "queue pair type", kQpTypes);
    if (auto s = o.find("secret")) {
      c.secret = s->as<std::string>();
      if (c.secret.size() < kMinSecretChars)
        s->fail(fmt::format("must be at least {} characters (launch makes 64 hex digits)", kMinSecretChars));
    }
    hosts = o.need("hosts");
  }
  const std::vector<engine::JsonValue> list = hosts.elements();
  if (list.empty()) hosts.fail("must be a non-empty array of hosts, one per rank");
  std::vector<engine::JsonValue> rows;
  for (const engine::JsonValue& host : list) {
    c.hosts.push_back(parse_host(host));
    if (auto row = engine::JsonObject(host).find("rdma")) rows.push_back(*row);
  }
  for (const engine::JsonValue& host : list)
    if (host.raw().contains("secondary_ip") != c.has_secondary())
      throw engine::InputError(file, engine::json_pointer(host.path(), "secondary_ip"),
                               "every host needs a secondary_ip when one has (the secondary network reaches all)");
  if (c.has_secondary() && c.port > 65532)
    throw engine::InputError(file, "/port",
                             fmt::format("must be at most 65532 with a secondary network (it uses port + 2 and + 3), "
                                         "got {}",
                                         c.port));
  if (!rows.empty()) {
    for (const engine::JsonValue& host : list)
      if (!host.raw().contains("rdma"))
        throw engine::InputError(file, engine::json_pointer(host.path(), "rdma"),
                                 "missing: every host needs an rdma row when one has");
    c.rdma_devices = DeviceMatrix::parse(rows);
  }
  return c;
}

ClusterSpec load_cluster(const std::string& path) { return parse_cluster(engine::read_text_file(path), path); }

std::string local_cluster_json(int n, int port, const std::string& rdma_device, const std::string& secret) {
  json hosts = json::array();
  for (int r = 0; r < n; ++r) {
    hosts.push_back({{"ssh", "localhost"}, {"ips", {"127.0.0.1"}}});
    if (rdma_device.empty()) continue;
    json row = json::array();
    for (int k = 0; k < n; ++k) row.push_back(k == r ? json(nullptr) : json(rdma_device));
    hosts.back()["rdma"] = row;
  }
  const std::string transport = rdma_device.empty() ? "tcp" : "rdma";
  json c{{"transport", transport}, {"port", port}, {"hosts", hosts}};
  if (!secret.empty()) c["secret"] = secret;
  return c.dump(2) + "\n";
}

void read_secret_from_stdin(ClusterSpec& c) {
  // launch writes the line before the rank starts: waiting long means nobody will.
  pollfd in{STDIN_FILENO, POLLIN, 0};
  if (poll_for(&in, 1, std::chrono::seconds(kSecretWaitSeconds)) <= 0 || !std::getline(std::cin, c.secret) ||
      c.secret.size() < kMinSecretChars)
    throw engine::InputError("stdin", "",
                             fmt::format("--secret-stdin: no cluster secret of at least {} characters on standard "
                                         "input within {} s",
                                         kMinSecretChars, kSecretWaitSeconds));
}

std::string secret_for_run(const ClusterSpec& c) { return c.secret.empty() ? make_cluster_secret() : c.secret; }

}  // namespace hw
