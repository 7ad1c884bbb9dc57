// rsl-shim's resource limits: an attempt's cgroup (v2, or v1 memory and cpu controllers) or,
// without one, RLIMIT_AS; and what its cgroup recorded (peak memory, OOM kills, usage).
#pragma once

#include <string>

#include "backend/shim_launch.h"

namespace rsl::shim {

//! Makes the attempt's cgroups and writes its limits as the backend asked (v2 first, then
//! v1); returns the mechanism used ("cgroup v2", "cgroup v1", "rlimit", "none") and fills
//! a->procs with the cgroup.procs files the child must join. A cgroup that cannot be written
//! is dropped with a note in a->note ("cgroup v2 not writable (...)").
std::string SetupLimits(Attempt* a);

//! SIGKILL to every process listed in a cgroup.procs file.
void KillCgroup(const std::string& procs_file);

//! The highest memory use the attempt's cgroup recorded (v2 memory.peak, kernels >= 5.19; v1
//! memory.max_usage_in_bytes); 0 without a memory cgroup.
long long CgroupPeak(const Attempt& a);

//! True when the attempt's memory cgroup counted an OOM kill (v2 memory.events, v1
//! memory.oom_control).
bool CgroupOomKilled(const Attempt& a);

//! The attempt's usage so far from its cgroup counters (v2: cpu.stat, memory.current; v1:
//! memory.usage_in_bytes and, where the cpu controller is mounted with cpuacct,
//! cpuacct.usage). Leaves *cpu_ms or *memory as it was when there is no counter for it
//! (callers start them at -1: read /proc instead).
void ReadCgroupUsage(const Attempt& a, long long* cpu_ms, long long* memory);

}  // namespace rsl::shim
