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

//! The jobs (ids) still in `states` of squeue once they had up to `seconds` to leave. A step's
//! clean exit is reported from its exit record while Slurm still shows its job RUNNING or
//! COMPLETING for a moment (src/backend/slurm_monitor.cc), so "no job left behind" is
//! asserted after that moment, not at the instant the exit arrived.
inline std::string JobsLeft(const std::string& states = "PD,R,CG", int seconds = 30) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (true) {
    std::string left = Sh("squeue -h -t " + states + " -o %A");
    if (left.empty() || std::chrono::steady_clock::now() >= deadline) return left;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
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

//! What the cluster is doing, for a failure message: the queue (every state), the nodes, the
//! processes of running jobs and the daemons' last log lines.
inline std::string ClusterDiagnostics() {
  std::string log = EnvVar("RSL_SLURM_DIR") + "/log/";
  return "--- squeue -t all\n" + Sh("squeue -t all -o '%i %j %T %M %N %R' 2>&1 | tail -15") +
         "--- sinfo\n" + Sh("sinfo -N -o '%N %T %C %E' 2>&1") +
         "--- scontrol show job (not completed)\n" +
         Sh("for j in $(squeue -h -o %A); do scontrol show job $j | head -12; done 2>&1") +
         "--- processes\n" +
         Sh("ps -eo pid,ppid,pgid,stat,etime,args | grep -E 'slurmstepd|slurm_script|job.sh|rsl|"
            "sleep' | grep -v grep | head -30") +
         // A job RUNNING longer than its step: where its slurmstepd and its batch script (run
         // as slurm_script from the node's spool) wait. Seen twice: a `true` step's script
         // waiting for a usage sampler that had lost its TERM (fixed: slurm_job.cc stops it
         // through its FIFO).
         "--- slurmstepd threads (wchan, then gdb backtraces)\n" +
         Sh("for p in $(pgrep -x slurmstepd); do echo \"slurmstepd $p: $(tr '\\0' ' ' < "
            "/proc/$p/cmdline)\"; for t in /proc/$p/task/*; do echo \"  $(basename $t) "
            "$(cat $t/comm) $(cat $t/wchan)\"; done; timeout 20 gdb -p $p -batch -ex "
            "'thread apply all bt' 2>/dev/null | grep -E '^(Thread|#)' | head -40; done 2>&1") +
         // Every descendant of each slurmstepd (state, wait channel, command), whatever its name,
         // and the memory cgroups of running jobs: a stepd waiting on a child that is hung (in
         // D state, or under a memory cgroup at its limit) shows here.
         "--- slurmstepd descendants\n" +
         Sh("for p in $(pgrep -x slurmstepd); do ps -eo pid,ppid,stat,wchan:32,etime,args | "
            "awk -v root=$p 'NR>1{pp[$1]=$2; line[$1]=$0} END{for (k in line){x=k; "
            "while ((x in pp) && x!=root && x>1) x=pp[x]; if (x==root && k!=root) print "
            "line[k]}}'; done 2>&1 | head -30") +
         "--- job memory cgroups\n" +
         Sh("for d in /sys/fs/cgroup/memory/slurm*/uid_*/job_* /sys/fs/cgroup/system.slice/"
            "*slurm*/job_* /sys/fs/cgroup/slurm*/job_*; do [ -d \"$d\" ] || continue; echo \"$d\"; "
            "for f in tasks cgroup.procs memory.usage_in_bytes memory.max_usage_in_bytes "
            "memory.oom_control memory.current memory.events; do [ -f \"$d/$f\" ] && echo "
            "\"  $f: $(tr '\\n' ' ' < $d/$f)\"; done; done 2>&1 | head -40") +
         "--- slurmctld.log\n" + Sh("grep -v -e pmix -e MPI: " + log + "slurmctld.log | tail -25") +
         "--- slurmd logs\n" +
         Sh("for n in n1 n2 n3; do echo \"[$n]\"; grep -v -e pmix -e MPI: " + log +
            "slurmd-$n.log | tail -12; done 2>&1");
}

//! A slurmd killed by an earlier test comes back (ReturnToService=2), so do a slurmctld
//! stopped and a node drained by one; waits for all idle. A job an earlier test left behind
//! (one killed by ctest's timeout never reaches its TearDown) is cancelled after 20 s, with
//! what the cluster was doing printed, so one failure does not become the next test's too.
inline void EnsureAllNodesIdle() {
  Sh("bash " + ClusterScript() + " start-ctld");
  for (std::string n : {"n1", "n2", "n3"}) {
    if (SlurmdPid(n) == 0) Sh("bash " + ClusterScript() + " start-node " + n);
    if (Sh("sinfo -h -n " + n + " -o %T").find("drain") != std::string::npos) {
      Sh("scontrol update nodename=" + n + " state=resume");
    }
  }
  auto start = std::chrono::steady_clock::now();
  auto deadline = start + std::chrono::seconds(80);
  bool cancelled = false;
  while (std::chrono::steady_clock::now() < deadline) {
    std::string states = Sh("sinfo -h -N -o '%N %T'");
    if (states.find("n1 idle") != std::string::npos &&
        states.find("n2 idle") != std::string::npos &&
        states.find("n3 idle") != std::string::npos) {
      return;
    }
    if (!cancelled && std::chrono::steady_clock::now() - start > std::chrono::seconds(20)) {
      std::printf("nodes not idle after 20 s; cancelling what is left:\n%s\n",
                  ClusterDiagnostics().c_str());
      Sh("squeue -h -o %A | xargs -r scancel");
      cancelled = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  FAIL() << "nodes not idle: " << ClusterDiagnostics();
}

}  // namespace rsl::slurm_test
