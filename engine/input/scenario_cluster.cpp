// The `cluster` part of a scenario: its nodes, and the fabric (a full mesh or
// explicit cables) with every cable's ports checked against the hardware.
#include "engine/input/scenario_cluster.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <string_view>
#include <tuple>
#include <utility>

namespace engine {

namespace {

// A full mesh has n(n-1)/2 cables: bound n so a hostile file cannot ask for billions.
constexpr int kMaxNodes = 256;
// A rank's compute threads: more than any machine has cores is a typo.
constexpr int kMaxThreads = 1024;

void read_nodes(JsonObject& cluster, Scenario& s, const Catalog& catalog) {
  JsonValue list = cluster.need("nodes");
  auto nodes = list.elements();
  if (nodes.empty()) list.fail("a cluster needs at least one node");
  if (nodes.size() > kMaxNodes) list.fail(fmt::format("at most {} nodes, got {}", kMaxNodes, nodes.size()));
  for (const JsonValue& v : nodes) {
    JsonObject o(v);
    JsonValue name_v = o.need("name");
    NodeSpec node{name_v.as<std::string>(), choice(o.need("hardware"), "hardware", catalog.hardware_names())};
    if (auto t = o.find("threads")) {
      node.threads = t->as<int>(kOne);
      if (node.threads > kMaxThreads) t->fail(fmt::format("at most {} threads, got {}", kMaxThreads, node.threads));
    }
    o.finish();
    bool plain = !node.name.empty() && std::all_of(node.name.begin(), node.name.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    });
    if (!plain) name_v.fail("a node name is letters, digits, '-', '_' or '.' (it is used in \"node:port\")");
    if (int other = s.node_index(node.name); other >= 0) {
      name_v.fail(fmt::format("duplicate node name '{}' (also /cluster/nodes/{})", node.name, other));
    }
    s.nodes.push_back(std::move(node));
  }
}

// One end of a cable that takes a port: where it was written, for messages.
struct Plug {
  int node;
  int port;  // 0: nothing to check (the full mesh numbers its own)
  std::string kind;
  std::string path;
};

// "m1:3" (or "m1" on a switched link) into a node index and a port.
std::pair<int, int> read_end(const JsonValue& v, const Scenario& s, const LinkCard& link) {
  auto text = v.as<std::string>();
  auto colon = text.rfind(':');
  std::string name = text.substr(0, colon);
  int node = s.node_index(name);
  if (node < 0) v.fail(unknown_name("node", name, node_names(s)));
  if (colon == std::string::npos) {
    if (!link.switched) {
      v.fail(
          fmt::format("needs a port, as in \"{}:1\": {} takes a {} port at each end", name, link.name, link.port_kind));
    }
    return {node, 0};
  }
  if (link.switched) v.fail(fmt::format("{} is switched and takes no port: write \"{}\"", link.name, name));
  std::string_view digits = std::string_view(text).substr(colon + 1);
  int port = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
  if (ec != std::errc() || end != digits.data() + digits.size() || port < 1) {
    v.fail(fmt::format("the port after ':' must be a number from 1, got '{}'", digits));
  }
  return {node, port};
}

// Each cable on a point-to-point link takes a port of the link's kind at both
// ends; switched links (Ethernet into a switch) take none.
void check_ports(const std::vector<Plug>& plugs, const Scenario& s, const Catalog& catalog) {
  std::map<std::pair<int, std::string>, int> need;
  for (const auto& p : plugs) ++need[{p.node, p.kind}];
  std::map<std::pair<int, std::string>, int> used;
  std::map<std::tuple<int, std::string, int>, std::string> taken;
  for (const auto& p : plugs) {
    const auto& node = s.nodes[p.node];
    const auto& ports = catalog.hardware(node.hardware).ports;
    auto it = ports.find(p.kind);
    int have = it == ports.end() ? 0 : it->second;
    if (++used[{p.node, p.kind}] > have) {
      throw InputError(s.file, p.path,
                       fmt::format("{} needs {} {} port(s) for its cables, but {} has {} usable", node.name,
                                   need[{p.node, p.kind}], p.kind, node.hardware, have));
    }
    if (p.port == 0) continue;
    if (p.port > have) {
      throw InputError(
          s.file, p.path,
          fmt::format("{} has no {} port {}: {} has ports 1 to {}", node.name, p.kind, p.port, node.hardware, have));
    }
    auto [at, fresh] = taken.try_emplace({p.node, p.kind, p.port}, p.path);
    if (!fresh) {
      throw InputError(s.file, p.path,
                       fmt::format("port {}:{} is already used by the cable at {}", node.name, p.port, at->second));
    }
  }
}

void check_connected(const JsonValue& where, const Scenario& s) {
  std::vector<bool> reached(s.nodes.size(), false);
  std::vector<int> todo{0};
  reached[0] = true;
  while (!todo.empty()) {
    int at = todo.back();
    todo.pop_back();
    for (const auto& c : s.fabric.cables) {
      for (auto [from, to] : {std::pair{c.a, c.b}, std::pair{c.b, c.a}}) {
        if (from == at && !reached[to]) {
          reached[to] = true;
          todo.push_back(to);
        }
      }
    }
  }
  for (size_t i = 0; i < s.nodes.size(); ++i) {
    if (!reached[i]) {
      where.fail(fmt::format("{} is not connected to {} by any chain of cables", s.nodes[i].name, s.nodes[0].name));
    }
  }
}

void read_fabric(JsonObject& cluster, Scenario& s, const Catalog& catalog) {
  JsonObject o = cluster.section("fabric");
  auto links = catalog.link_names();
  if (auto v = o.find("type")) s.fabric.type = choice<FabricType>(*v, "fabric type");
  s.fabric.link = choice(o, "link", "link", links, "tb5-rdma");
  if (auto v = o.find("secondary_link")) s.fabric.secondary_link = choice(*v, "link", links);
  const LinkCard& main_link = catalog.link(s.fabric.link);
  std::vector<Plug> plugs;
  if (s.fabric.type == FabricType::kFullMesh) {
    // Ports are numbered per node in the order its cables are generated.
    std::vector<int> next(s.nodes.size(), 1);
    for (int a = 0; a < int(s.nodes.size()); ++a) {
      for (int b = a + 1; b < int(s.nodes.size()); ++b) {
        Cable c{a, b, 0, 0, s.fabric.link};
        if (!main_link.switched) {
          c.port_a = next[a]++;
          c.port_b = next[b]++;
          plugs.push_back({a, 0, main_link.port_kind, o.value().path()});
          plugs.push_back({b, 0, main_link.port_kind, o.value().path()});
        }
        s.fabric.cables.push_back(c);
      }
    }
  } else {
    JsonValue list = o.need("cables");
    for (const JsonValue& v : list.elements()) {
      JsonObject co(v);
      Cable c;
      c.link = choice(co, "link", "link", links, s.fabric.link);
      const LinkCard& link = catalog.link(c.link);
      JsonValue a = co.need("a"), b = co.need("b");
      co.finish();
      std::tie(c.a, c.port_a) = read_end(a, s, link);
      std::tie(c.b, c.port_b) = read_end(b, s, link);
      if (c.a == c.b) b.fail(fmt::format("a cable joins two different nodes; both ends are {}", s.nodes[c.a].name));
      if (!link.switched) {
        plugs.push_back({c.a, c.port_a, link.port_kind, a.path()});
        plugs.push_back({c.b, c.port_b, link.port_kind, b.path()});
      }
      s.fabric.cables.push_back(c);
    }
    check_connected(list, s);
  }
  o.finish();
  check_ports(plugs, s, catalog);
}

}  // namespace

std::vector<std::string> node_names(const Scenario& s) {
  std::vector<std::string> out;
  for (const auto& n : s.nodes) out.push_back(n.name);
  return out;
}

void read_cluster(JsonObject& root, Scenario& s, const Catalog& catalog) {
  JsonObject cluster(root.need("cluster"));
  read_nodes(cluster, s, catalog);
  read_fabric(cluster, s, catalog);
  cluster.finish();
}

}  // namespace engine
