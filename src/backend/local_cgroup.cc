#include "backend/local_cgroup.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>

#include "backend/local.h"
#include "base/file.h"
#include "base/strings.h"

namespace rsl::backend {
namespace {

// Mount point of a cgroup hierarchy: `v2` for cgroup2, else the v1 one with `controller`.
std::string CgroupMount(bool v2, const std::string& controller) {
  std::ifstream in("/proc/self/mounts");
  std::string dev, dir, type, opts, rest;
  while (in >> dev >> dir >> type >> opts) {
    std::getline(in, rest);
    if (v2 && type == "cgroup2") return dir;
    if (!v2 && type == "cgroup") {
      for (const auto& o : Split(opts, ',')) {
        if (o == controller) return dir;
      }
    }
  }
  return "";
}

// This process's path inside a hierarchy, from /proc/self/cgroup ("" for v2's "0::").
std::string SelfCgroupPath(const std::string& controller) {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    auto parts = Split(line, ':');
    if (parts.size() < 3) continue;
    std::string path = line.substr(parts[0].size() + parts[1].size() + 2);
    if (controller.empty() && parts[0] == "0" && parts[1].empty()) return path;
    if (!controller.empty()) {
      for (const auto& c : Split(parts[1], ',')) {
        if (c == controller) return path;
      }
    }
  }
  return "";
}

bool Writable(const std::string& dir) {
  std::string probe = dir + "/rsl";
  if (mkdir(probe.c_str(), 0755) != 0 && errno != EEXIST) return false;
  return access(probe.c_str(), W_OK) == 0;
}

}  // namespace

CgroupBases DetectCgroups(const std::string& wanted) {
  CgroupBases b;
  if (wanted == "auto" || wanted == "cgroup-v2") {
    std::string mount = CgroupMount(true, "");
    if (!mount.empty()) {
      std::string base = mount + SelfCgroupPath("");
      std::string controllers;
      if (auto c = ReadFile(base + "/cgroup.controllers"); c.ok()) controllers = *c;
      bool has_memory = false;
      for (const auto& c : Split(std::string(Trim(controllers)), ' ')) has_memory |= c == "memory";
      if (has_memory && Writable(base)) {
        // Enable the controllers for our subtree (a no-op if already enabled).
        std::ofstream(base + "/rsl/cgroup.subtree_control") << "+memory +cpu";
        b.mechanism = "cgroup v2";
        b.v2 = base + "/rsl";
        b.v2_mount = mount;
        return b;
      }
    }
  }
  if (wanted == "auto" || wanted == "cgroup-v1") {
    std::string mem = CgroupMount(false, "memory");
    std::string cpu = CgroupMount(false, "cpu");
    if (!mem.empty()) {
      std::string mem_base = mem + SelfCgroupPath("memory");
      if (Writable(mem_base)) {
        b.mechanism = "cgroup v1";
        b.mem = mem_base + "/rsl";
        b.mem_mount = mem;
        if (!cpu.empty()) {
          std::string cpu_base = cpu + SelfCgroupPath("cpu");
          if (Writable(cpu_base)) b.cpu = cpu_base + "/rsl";
        }
        return b;
      }
    }
  }
  b.mechanism = wanted == "none" ? "none" : "rlimit";
  return b;
}

std::string DetectLimitMechanism() { return DetectCgroups("auto").mechanism; }

}  // namespace rsl::backend
