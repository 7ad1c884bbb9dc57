// Step isolation: under which identity a step runs, so that it cannot reach the control
// plane (the state directory: database, tokens, secrets, other runs) nor another namespace's
// files. docs/security.md has the guarantees of each mode.
//
//   users      (the controller runs as root) each namespace gets its own unprivileged uid
//              and gid, allocated once from a base and kept in <state_dir>/step-identities;
//              the step drops to it before exec (groups cleared). Its working and staging
//              directories are made for it (0700); the state directory is 0700 and its own.
//   user:NAME  (root) every step runs as the one account NAME (its uid and primary gid).
//   namespace  (the controller runs unprivileged) the step runs in a private user and mount
//              namespace where the state directory and the runs directory are empty, apart
//              from the step's own working and staging directories and the outputs of the
//              steps it depends on (read-only).
//   none       steps run as the controller's user and see everything it sees.
//   auto       users when running as root, namespace otherwise.
#pragma once

#include <sys/types.h>

#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "base/status.h"

namespace rsl::backend {

enum class IsolationMode { kNone, kUsers, kUser, kNamespace };
const char* IsolationModeName(IsolationMode mode);

//! The first uid (and gid) handed to a namespace in `users` mode: 0x70000000, above the
//! ranges systemd hands to containers and dynamic users, below 2^31.
inline constexpr uid_t kDefaultStepUidBase = 0x70000000;

struct Isolation {
  IsolationMode mode = IsolationMode::kNone;
  uid_t user_uid = 0;  //!< kUser: the account's uid and gid
  gid_t user_gid = 0;
  uid_t uid_base = kDefaultStepUidBase;
};

//! Parses auto | users | user:NAME | namespace | none (auto resolved for this process).
//! Errors: INVALID_ARGUMENT (unknown mode, unknown user, users/user without root,
//! namespace where this kernel refuses unprivileged user namespaces).
Result<Isolation> ParseIsolation(const std::string& text, uid_t uid_base = kDefaultStepUidBase);

//! Can this process make a user and mount namespace (probed once in a child)?
bool UserNamespacesWork();

struct StepIdentity {
  uid_t uid = 0;
  gid_t gid = 0;
};

//! Can a step that runs under `isolation` reach directories below `runs_dir`? With users or
//! user:NAME, every existing ancestor of it must let others pass (o+x; for user:NAME, its
//! owner or group may be that account): a runs directory below /root (0700) would leave
//! every step unable to enter its working directory. Errors: INVALID_ARGUMENT naming the
//! directory that stops them, its mode, and a hint.
Status CheckRunsDirReachable(const std::string& runs_dir, const Isolation& isolation);

class IdentityMap;
//! Who a step of `namespace_` runs as under `isolation`: nobody else (none, namespace: the
//! controller's own user), the one account (user:NAME) or the namespace's uid from `map`
//! (users). Errors: IO_ERROR (the map could not be written).
Result<std::optional<StepIdentity>> StepIdentityFor(const Isolation& isolation, IdentityMap* map,
                                                    const std::string& namespace_);

//! Makes `dir` (which must exist) the step's: owner who.uid:who.gid, mode 0700, through an
//! O_NOFOLLOW descriptor (a link in its place is refused). Errors: IO_ERROR.
Status HandDirTo(const std::string& dir, const StepIdentity& who);

//! The namespace -> uid map of `users` mode, kept in <state_dir>/step-identities, one
//! "<uid> <namespace>" line per namespace, appended under an exclusive lock and fsynced
//! before it is used, so a uid once handed out never changes or moves to another namespace
//! (files on disk are owned by it). Thread-safe.
class IdentityMap {
 public:
  IdentityMap(std::string state_dir, uid_t base)
      : path_(state_dir + "/step-identities"), base_(base) {}
  //! The namespace's identity, allocated on first use. Errors: IO_ERROR.
  Result<StepIdentity> For(const std::string& namespace_);

 private:
  Status LoadLocked();  // REQUIRES: the file's lock held

  std::string path_;
  uid_t base_;
  std::mutex mu_;
  std::map<std::string, uid_t> uids_;
};

}  // namespace rsl::backend
