// Isolation "namespace" (backend/identity.h) in rsl-shim: the supervisor plans, the step's
// child enters. The child makes a user and mount namespace, lays an empty tmpfs over each
// hidden directory (the state and runs directories), and binds back the step's own
// directories (read-write) and its dependencies' outputs (read-only) at their paths.
#pragma once

#include <string>
#include <vector>

#include "backend/shim_launch.h"

namespace rsl::shim {

//! What the child sets up, prepared by the supervisor.
struct NsPlan {
  struct Bind {
    std::string path;
    bool ro = false;
    unsigned long keep = 0;  // the source mount's flags a remount in a user namespace keeps
  };
  std::string uid_map, gid_map;     // "<ours> <ours> 1": the step stays our user inside
  std::vector<std::string> hide;    // tmpfs over each
  std::vector<std::string> mkdirs;  // inside those tmpfs, parents first
  std::vector<Bind> binds;
};

//! The plan for an attempt launched with "userns": its hidden directories (those that exist;
//! one below another hidden one is hidden with it), and a bind for each of its directories
//! (workdir and make_dirs read-write, ro read-only) that lies below a hidden one and exists,
//! with the directories the tmpfs needs to hold it.
NsPlan PlanNamespace(const Attempt& a);

//! The child's half: false with errno set and *what naming the step that failed. Always a
//! forked child (SpawnChild), never a vfork one, so it may allocate; it changes what is per
//! memory map (its dumpable flag).
bool EnterNamespace(const NsPlan& ns, const char** what);

}  // namespace rsl::shim
