// rsl-shim's part in running attempts in containers (docs/image.md): an attempt in a container
// is `runc --root <state>/runc run --bundle <state>/containers/<id> <id>` (local.cc plans it);
// its PID 1 is rsl-cinit, which dies with that runc, and so does everything in its PID
// namespace: a SIGKILLed supervisor leaves no container process. What runc could not remove
// then (its state under <state>/runc, the container's cgroups) the next supervisor of the state
// directory removes when it starts, before it serves anyone.
#pragma once

#include <string>
#include <vector>

namespace rsl::shim {

//! `runc --root <state_dir>/runc delete --force ID` for every container runc still knows
//! there, and their config directories under <state_dir>/containers. Blocks; runc from PATH.
void RemoveStaleContainers(const std::string& state_dir);

//! Removes the per-attempt config directory of a container attempt (the --bundle argument
//! of its runc argv), if it has one.
void RemoveContainerConfig(const std::vector<std::string>& argv);

}  // namespace rsl::shim
