// One attempt of rsl-shim: what a "launch" message asks for (ParseLaunch, pure) and, while the
// attempt lives, what the supervisor keeps of it (its process, pipe, limits and timers).
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace rsl::shim {

constexpr int kDefaultGraceMs = 10'000;  // SIGTERM -> SIGKILL

struct Attempt {
  // What the launch message asked for (ParseLaunch).
  std::string id, exit_file, log_path, workdir;
  std::vector<std::string> argv, env, make_dirs, secrets;
  long long memory = 0, cpu_millis = 0;
  std::string v2_cg, mem_cg, cpu_cg;
  int grace_ms = kDefaultGraceMs;
  long long uid = -1, gid = -1;  // isolation by uid: the step's identity (-1: ours)
  bool userns = false;           // isolation by a mount namespace
  std::vector<std::string> hide, ro;
  std::string in_use;  // an image bundle's in-use file: shared-locked while the attempt lives
  int in_use_fd = -1;

  // What the supervisor keeps while the attempt lives.
  std::string mechanism = "none", note;
  std::vector<std::string> procs;  // cgroup.procs files the child joins
  int owner = -1;                  // connection fd that gets the exit message; -1 = none
  pid_t pid = -1;
  int log_fd = -1, pipe_fd = -1;  // pipe_fd: read end of the step's stdout+stderr pipe
  bool log_opened = false;        // the log was opened (or tried) at the first output
  std::string pending;            // masked output not yet ending in a newline
  std::string journal;            // the exit journal's directory while the attempt is alive
  std::string stop;               // "", "cancel" or "timeout"
  int64_t start_ms = 0, started_us = 0, kill_at = -1;
  // After the main process ended:
  bool exited = false;
  int status = 0;
  rusage ru{};
  int64_t wall_ms = 0, ended_us = 0, drain_until = -1;
  // Live usage samples (SampleUsage): when the next is due, the highest memory seen, the CPU
  // time at the last sample and the highest CPU rate between two samples (millicores).
  int64_t next_sample_ms = -1;
  long long sampled_peak = 0;
  int64_t last_sample_ms = -1;
  long long last_cpu_ms = 0;
  long long peak_cpu_millicores = 0;
  // What the child reads until its exec (shim_spawn.h's ChildPlan and what it points at) and
  // the stack it runs on (ChildStacks): kept until the attempt has ended.
  std::shared_ptr<const void> child_plan;
  void* child_stack = nullptr;
};

//! The attempt a {"op":"launch",...} message asks for (fields as in shim_supervisor.h's
//! protocol). Missing fields keep their defaults, as do list entries that are not strings; a
//! scalar field of another type throws nlohmann::json::type_error. Never root: uid 0, or a
//! uid without a gid, means "run as ours" (-1). The caller checks id and argv.
std::unique_ptr<Attempt> ParseLaunch(const nlohmann::json& msg);

}  // namespace rsl::shim
