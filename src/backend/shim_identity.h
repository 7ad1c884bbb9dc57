// Who rsl-shim deals with: the peers it accepts (its own user, in its own user namespace) and
// the identity an isolated step runs as (isolation by uid, backend/identity.h).
#pragma once

#include <sys/types.h>

#include <string>

namespace rsl::shim {

//! A step isolated by a user namespace runs as our uid too: it is told apart by its user
//! namespace. /proc/<pid>/uid_map is readable by all and shows the map as seen from ours, so
//! it equals our own exactly when the peer is in our namespace. False for pid <= 0.
bool InOurUserNamespace(pid_t pid);

//! Hands an isolated step its directory: owner uid:gid, mode 0700. Through an O_NOFOLLOW
//! descriptor, so a link in its place is refused, never followed. errno is kept on failure.
bool GiveDir(const std::string& dir, uid_t uid, gid_t gid);
//! GiveDir for a directory this process has just made 0700 in a directory of its own (so
//! nobody can have put anything else in its place): one chown, links not followed.
bool GiveNewDir(const std::string& dir, uid_t uid, gid_t gid);

}  // namespace rsl::shim
