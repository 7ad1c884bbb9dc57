#include "backend/identity.h"

#include <fcntl.h>
#include <pwd.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"

namespace rsl::backend {

const char* IsolationModeName(IsolationMode mode) {
  switch (mode) {
    case IsolationMode::kNone:
      return "none";
    case IsolationMode::kUsers:
      return "users";
    case IsolationMode::kUser:
      return "user";
    case IsolationMode::kNamespace:
      return "namespace";
  }
  return "none";
}

bool UserNamespacesWork() {
  static const bool works = [] {
    pid_t pid = fork();
    if (pid == 0) {
      _exit(unshare(CLONE_NEWUSER | CLONE_NEWNS) == 0 ? 0 : 1);
    }
    if (pid < 0) return false;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }();
  return works;
}

Result<Isolation> ParseIsolation(const std::string& text, uid_t uid_base) {
  Isolation iso;
  iso.uid_base = uid_base;
  bool root = geteuid() == 0;
  std::string mode = text.empty() ? "auto" : text;
  if (mode == "auto") mode = root ? "users" : "namespace";
  auto need_root = [&](const std::string& what) -> Status {
    if (root) return Status::Ok();
    return Error(codes::kInvalidArgument, "step isolation " + Quote(what) + " needs root")
        .Value(text)
        .Hint("run the controller as root, or use --step-isolation namespace");
  };
  if (mode == "none") return iso;
  if (mode == "users") {
    RSL_RETURN_IF_ERROR(need_root(mode));
    iso.mode = IsolationMode::kUsers;
    return iso;
  }
  if (mode.rfind("user:", 0) == 0) {
    RSL_RETURN_IF_ERROR(need_root(mode));
    std::string name = mode.substr(5);
    passwd pw{};
    passwd* found = nullptr;
    char buf[4096];
    if (name.empty() || getpwnam_r(name.c_str(), &pw, buf, sizeof(buf), &found) != 0 || !found) {
      return Error(codes::kInvalidArgument, "step isolation: no such user " + Quote(name))
          .Value(text)
          .Hint("create the account (useradd --system " + name + ") or use --step-isolation users");
    }
    if (found->pw_uid == 0) {
      return Error(codes::kInvalidArgument, "step isolation: user " + Quote(name) + " is root")
          .Value(text)
          .Hint("steps must run unprivileged: name an unprivileged account");
    }
    iso.mode = IsolationMode::kUser;
    iso.user_uid = found->pw_uid;
    iso.user_gid = found->pw_gid;
    return iso;
  }
  if (mode == "namespace") {
    if (root) {
      // Root in a user namespace it made itself could unmount what hides the state directory.
      return Error(codes::kInvalidArgument,
                   "step isolation 'namespace' is for an unprivileged "
                   "controller")
          .Value(text)
          .Hint("as root, use --step-isolation users (one uid per namespace) or user:NAME");
    }
    if (!UserNamespacesWork()) {
      return Error(codes::kInvalidArgument,
                   "step isolation 'namespace': this kernel refuses unprivileged user namespaces")
          .Value(text)
          .Hint(
              "run the controller as root (isolation by uid), enable user namespaces "
              "(sysctl kernel.unprivileged_userns_clone=1), or accept no isolation with "
              "--step-isolation none");
    }
    iso.mode = IsolationMode::kNamespace;
    return iso;
  }
  return Error(codes::kInvalidArgument, "unknown step isolation " + Quote(text))
      .Value(text)
      .Hint("use auto, users, user:NAME, namespace or none");
}

Status CheckRunsDirReachable(const std::string& runs_dir, const Isolation& isolation) {
  if (isolation.mode != IsolationMode::kUsers && isolation.mode != IsolationMode::kUser) {
    return Status::Ok();
  }
  std::string path;
  for (const auto& part : Split(runs_dir, '/')) {
    if (part.empty()) continue;
    path += "/" + part;
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) break;  // made by us from here on (0711)
    if (!S_ISDIR(st.st_mode)) break;
    bool passes = (st.st_mode & S_IXOTH) != 0;
    if (isolation.mode == IsolationMode::kUser) {
      passes = passes || (st.st_uid == isolation.user_uid && (st.st_mode & S_IXUSR)) ||
               (st.st_gid == isolation.user_gid && (st.st_mode & S_IXGRP));
    }
    if (!passes) {
      char mode[8];
      snprintf(mode, sizeof(mode), "%04o", unsigned(st.st_mode & 07777));
      return Error(codes::kInvalidArgument, "steps cannot reach the runs directory " + runs_dir +
                                                ": " + path + " is mode " + mode +
                                                " and they run as unprivileged users")
          .Value(path)
          .Hint(
              "put the runs directory where others may pass (--runs-dir /var/lib/rsl-runs), "
              "open " +
              path +
              " to passage (chmod o+x), or run steps as yourself with "
              "--step-isolation none on a single user's machine");
    }
  }
  return Status::Ok();
}

Result<std::optional<StepIdentity>> StepIdentityFor(const Isolation& isolation, IdentityMap* map,
                                                    const std::string& namespace_) {
  if (isolation.mode == IsolationMode::kUser) {
    return std::optional<StepIdentity>(StepIdentity{isolation.user_uid, isolation.user_gid});
  }
  if (isolation.mode != IsolationMode::kUsers) return std::optional<StepIdentity>();
  auto id = map->For(namespace_);
  if (!id.ok()) return id.error();
  return std::optional<StepIdentity>(*id);
}

Status HandDirTo(const std::string& dir, const StepIdentity& who) {
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return OsError(codes::kIoError, "cannot open directory", dir, errno);
  bool ok = fchown(fd, who.uid, who.gid) == 0 && fchmod(fd, 0700) == 0;
  int e = errno;
  close(fd);
  if (!ok) {
    return OsError(codes::kIoError, "cannot hand to uid " + std::to_string(who.uid), dir, e);
  }
  return Status::Ok();
}

Status IdentityMap::LoadLocked() {
  auto text = ReadFile(path_);
  if (!text.ok()) return text.error();
  uids_.clear();
  for (const auto& line : Split(*text, '\n')) {
    size_t sp = line.find(' ');
    if (sp == std::string::npos || sp == 0) continue;  // a torn last line: never used
    char* end = nullptr;
    unsigned long uid = strtoul(line.c_str(), &end, 10);
    if (end != line.c_str() + sp) continue;
    uids_.emplace(line.substr(sp + 1), uid_t(uid));
  }
  return Status::Ok();
}

Result<StepIdentity> IdentityMap::For(const std::string& namespace_) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = uids_.find(namespace_); it != uids_.end())
    return StepIdentity{it->second, it->second};
  int fd = open(path_.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return OsError(codes::kIoError, "cannot open", path_, errno);
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  while (flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR) return OsError(codes::kIoError, "cannot lock", path_, errno);
  }
  RSL_RETURN_IF_ERROR(LoadLocked());  // another process may have added some
  if (auto it = uids_.find(namespace_); it != uids_.end())
    return StepIdentity{it->second, it->second};
  uid_t next = base_;
  for (const auto& [ns, uid] : uids_) next = std::max<uid_t>(next, uid + 1);
  std::string line = std::to_string(next) + " " + namespace_ + "\n";
  if (write(fd, line.data(), line.size()) != ssize_t(line.size()) || fdatasync(fd) != 0) {
    return OsError(codes::kIoError, "cannot record a step identity in", path_, errno);
  }
  uids_[namespace_] = next;
  return StepIdentity{next, next};
}

}  // namespace rsl::backend
