// The local backend's resource limits: which mechanism this host offers (cgroup v2, cgroup v1,
// else rlimits) and where per-attempt cgroups go. Detected once, when the backend starts.
#pragma once

#include <string>

namespace rsl::backend {

//! Where per-attempt cgroups are made, by mechanism.
struct CgroupBases {
  std::string mechanism;            // "cgroup v2" | "cgroup v1" | "rlimit"
  std::string v2, mem, cpu;         // parent directories for per-attempt cgroups
  std::string v2_mount, mem_mount;  // their hierarchies' mount points (runc's cgroupsPath)
};

//! `wanted`: "auto" (v2, else v1, else rlimit), "cgroup-v2", "cgroup-v1", "rlimit" or "none".
//! A hierarchy counts only where this process may create its "rsl" subtree.
CgroupBases DetectCgroups(const std::string& wanted);

}  // namespace rsl::backend
