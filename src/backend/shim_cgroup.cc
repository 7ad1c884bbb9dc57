#include "backend/shim_cgroup.h"

#include <signal.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "backend/shim_io.h"

namespace rsl::shim {

std::string SetupLimits(Attempt* a) {
  bool want = a->memory > 0 || a->cpu_millis > 0;
  if (!a->v2_cg.empty()) {
    if (mkdir(a->v2_cg.c_str(), 0755) == 0 || errno == EEXIST) {
      bool ok = true;
      if (a->memory > 0) {
        ok &= WriteString(a->v2_cg + "/memory.max", std::to_string(a->memory));
        WriteString(a->v2_cg + "/memory.swap.max", "0");
      }
      if (a->cpu_millis > 0) {
        ok &= WriteString(a->v2_cg + "/cpu.max", std::to_string(a->cpu_millis * 100) + " 100000");
      }
      if (ok) {
        a->procs.push_back(a->v2_cg + "/cgroup.procs");
        return "cgroup v2";
      }
    }
    a->note = "cgroup v2 not writable (" + std::string(strerror(errno)) + ")";
    a->v2_cg.clear();
  }
  if (!a->mem_cg.empty() || !a->cpu_cg.empty()) {
    bool ok = true;
    if (!a->mem_cg.empty()) {
      ok &= mkdir(a->mem_cg.c_str(), 0755) == 0 || errno == EEXIST;
      if (ok && a->memory > 0) {
        ok &= WriteString(a->mem_cg + "/memory.limit_in_bytes", std::to_string(a->memory));
        // Without swap accounting a limited step would swap instead of being OOM-killed.
        WriteString(a->mem_cg + "/memory.memsw.limit_in_bytes", std::to_string(a->memory));
      }
      if (ok) a->procs.push_back(a->mem_cg + "/cgroup.procs");
    }
    if (ok && !a->cpu_cg.empty()) {
      ok &= mkdir(a->cpu_cg.c_str(), 0755) == 0 || errno == EEXIST;
      if (ok && a->cpu_millis > 0) {
        ok &= WriteString(a->cpu_cg + "/cpu.cfs_period_us", "100000");
        ok &= WriteString(a->cpu_cg + "/cpu.cfs_quota_us", std::to_string(a->cpu_millis * 100));
      }
      if (ok) a->procs.push_back(a->cpu_cg + "/cgroup.procs");
    }
    if (ok) return "cgroup v1";
    a->procs.clear();
    a->note = "cgroup v1 not writable (" + std::string(strerror(errno)) + ")";
  }
  return want ? "rlimit" : "none";
}

void KillCgroup(const std::string& procs_file) {
  std::string pids = ReadSmall(procs_file);
  size_t start = 0;
  while (start < pids.size()) {
    size_t end = pids.find('\n', start);
    if (end == std::string::npos) end = pids.size();
    int pid = atoi(pids.c_str() + start);
    if (pid > 0) kill(pid, SIGKILL);
    start = end + 1;
  }
}

long long CgroupPeak(const Attempt& a) {
  if (a.mechanism == "cgroup v2") return atoll(ReadSmall(a.v2_cg + "/memory.peak").c_str());
  if (a.mechanism == "cgroup v1" && !a.mem_cg.empty()) {
    return atoll(ReadSmall(a.mem_cg + "/memory.max_usage_in_bytes").c_str());
  }
  return 0;
}

bool CgroupOomKilled(const Attempt& a) {
  if (a.mechanism == "cgroup v2") {
    return ReadNumberAfter(ReadSmall(a.v2_cg + "/memory.events"), "oom_kill ") > 0;
  } else if (a.mechanism == "cgroup v1" && !a.mem_cg.empty()) {
    return ReadNumberAfter(ReadSmall(a.mem_cg + "/memory.oom_control"), "oom_kill ") > 0;
  }
  return false;
}

void ReadCgroupUsage(const Attempt& a, long long* cpu_ms, long long* memory) {
  if (a.mechanism == "cgroup v2") {
    *cpu_ms = ReadNumberAfter(ReadSmall(a.v2_cg + "/cpu.stat"), "usage_usec ") / 1000;
    *memory = atoll(ReadSmall(a.v2_cg + "/memory.current").c_str());
  } else if (a.mechanism == "cgroup v1") {
    if (!a.mem_cg.empty()) {
      *memory = atoll(ReadSmall(a.mem_cg + "/memory.usage_in_bytes").c_str());
    }
    std::string usage = a.cpu_cg.empty() ? "" : ReadSmall(a.cpu_cg + "/cpuacct.usage");
    if (!usage.empty()) *cpu_ms = atoll(usage.c_str()) / 1'000'000;
  }
}

}  // namespace rsl::shim
