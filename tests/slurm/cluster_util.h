// Helpers the Slurm integration tests share: the fixture's cluster (scripts/slurm-cluster.sh,
// place and ports from compile definitions), shell commands, waiting for idle nodes.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "base/file.h"

namespace rsl::slurm_test {

inline std::string EnvVar(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

//! Runs a shell command, returns its stdout.
inline std::string Sh(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

inline std::string Slurp(const std::string& path) {
  auto text = ReadFile(path);
  return text.ok() ? *text : "";
}

inline std::string ClusterScript() {
  return std::string(RSL_SOURCE_DIR) + "/scripts/slurm-cluster.sh";
}

//! Points this process (and the commands it runs) at the fixture's cluster.
inline void UseFixtureCluster() {
  ::setenv("RSL_SLURM_DIR", RSL_SLURM_TEST_DIR, 1);
  ::setenv("RSL_SLURM_CTLD_PORT", RSL_SLURM_TEST_CTLD_PORT, 1);
  ::setenv("RSL_SLURM_SLURMD_PORT_BASE", RSL_SLURM_TEST_SLURMD_PORT_BASE, 1);
  ::setenv("SLURM_CONF", RSL_SLURM_TEST_DIR "/etc/slurm.conf", 1);
}

//! The pid of a node's slurmd, 0 if none runs.
inline int SlurmdPid(const std::string& node) {
  std::string pid =
      Sh("cat " + EnvVar("RSL_SLURM_DIR") + "/run/slurmd-" + node + ".pid 2>/dev/null");
  int p = std::atoi(pid.c_str());
  return (p > 0 && ::kill(p, 0) == 0) ? p : 0;
}

//! A slurmd killed by an earlier test comes back (ReturnToService=2), so do a slurmctld
//! stopped and a node drained by one; waits for all idle.
inline void EnsureAllNodesIdle() {
  Sh("bash " + ClusterScript() + " start-ctld");
  for (std::string n : {"n1", "n2", "n3"}) {
    if (SlurmdPid(n) == 0) Sh("bash " + ClusterScript() + " start-node " + n);
    if (Sh("sinfo -h -n " + n + " -o %T").find("drain") != std::string::npos) {
      Sh("scontrol update nodename=" + n + " state=resume");
    }
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    std::string states = Sh("sinfo -h -N -o '%N %T'");
    if (states.find("n1 idle") != std::string::npos &&
        states.find("n2 idle") != std::string::npos &&
        states.find("n3 idle") != std::string::npos) {
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  FAIL() << "nodes not idle: " << Sh("sinfo -N -o '%N %T %E'");
}

}  // namespace rsl::slurm_test
