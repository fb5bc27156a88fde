#include "hw/cpu_quota.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace hw {

namespace {

constexpr int kPeriodUs = 100000;

struct Hierarchy {
  std::string root;  // "" when there is none with the cpu controller
  bool v2 = false;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool has_word(const std::string& list, const std::string& word, char sep) {
  std::stringstream s(list);
  for (std::string w; std::getline(s, w, sep);)
    if (w == word || w == word + "\n") return true;
  return false;
}

// The mounted hierarchy that carries the cpu controller, from /proc/self/mounts.
Hierarchy cpu_hierarchy() {
  std::ifstream mounts("/proc/self/mounts");
  Hierarchy v1;
  for (std::string dev, dir, type, options, rest;
       mounts >> dev >> dir >> type >> options && std::getline(mounts, rest);) {
    if (type == "cgroup2" && has_word(read_file(dir + "/cgroup.controllers"), "cpu", ' ')) return {dir, true};
    if (type == "cgroup" && has_word(options, "cpu", ',') && v1.root.empty()) v1 = {dir, false};
  }
  return v1;
}

void write(const std::string& path, const std::string& value) {
  std::ofstream out(path);
  out << value << std::flush;
  if (!out) throw std::runtime_error("cannot write \"" + value + "\" to " + path);
}

// On v2 a group gets cpu.max only once its parent hands it the controller; a
// parent with processes of its own cannot (the "no internal processes" rule).
void enable_cpu(const Hierarchy& h) {
  if (h.v2) write(h.root + "/cgroup.subtree_control", "+cpu");
}

}  // namespace

std::string CpuQuota::unavailable_reason() {
  const Hierarchy h = cpu_hierarchy();
  if (h.root.empty()) return "no cgroup hierarchy with the cpu controller is mounted (/proc/self/mounts)";
  const std::string probe = h.root + "/meshinfer-probe-" + std::to_string(::getpid());
  std::error_code ec;
  if (!std::filesystem::create_directory(probe, ec))
    return "cannot create a cgroup under " + h.root + ": " + (ec ? ec.message() : "it exists");
  std::filesystem::remove(probe, ec);
  try {
    enable_cpu(h);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

CpuQuota::CpuQuota(const std::string& name) {
  const Hierarchy h = cpu_hierarchy();
  if (h.root.empty()) throw std::runtime_error("no cgroup hierarchy with the cpu controller");
  enable_cpu(h);
  v2_ = h.v2;
  dir_ = h.root + "/" + name;
  std::filesystem::create_directory(dir_);
}

CpuQuota::~CpuQuota() {
  std::error_code ec;
  std::filesystem::remove(dir_, ec);  // fails while a process is still in it
}

void CpuQuota::limit(pid_t pid, double cpus) {
  write(dir_ + "/cgroup.procs", std::to_string(pid));
  const std::string quota = cpus > 0 ? std::to_string(static_cast<long>(cpus * kPeriodUs)) : "";
  if (v2_) {
    write(dir_ + "/cpu.max", (quota.empty() ? "max" : quota) + " " + std::to_string(kPeriodUs));
  } else {
    write(dir_ + "/cpu.cfs_period_us", std::to_string(kPeriodUs));
    write(dir_ + "/cpu.cfs_quota_us", quota.empty() ? "-1" : quota);
  }
}

}  // namespace hw
