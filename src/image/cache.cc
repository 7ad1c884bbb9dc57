#include "image/cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <utility>

#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"

extern char** environ;

namespace rsl::image {

namespace {

using nlohmann::json;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Runs argv (found in PATH) with stdout+stderr to `log`; its exit status, or -1.
int RunTool(const std::vector<std::string>& argv, const std::string& log) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The tool's last lines of output, for an error message.
std::string Tail(const std::string& log) {
  auto text = ReadFile(log);
  if (!text.ok()) return "";
  std::string t(Trim(*text));
  if (t.size() > 600) t = "..." + t.substr(t.size() - 600);
  return t;
}

// An exclusive lock on `path` (created), waited for; the fd, or -1.
int LockFile(const std::string& path, int op) {
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  while (flock(fd, op) != 0) {
    if (errno != EINTR) {
      close(fd);
      return -1;
    }
  }
  return fd;
}

// Whether someone holds the bundle's in-use lock (tested by taking it exclusively, never
// waiting); *fd gets the held exclusive lock when nobody does.
bool InUse(const std::string& bundle, int* fd) {
  *fd = open((bundle + "/in-use").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (*fd < 0) return false;
  if (flock(*fd, LOCK_EX | LOCK_NB) == 0) return false;
  close(*fd);
  *fd = -1;
  return true;
}

std::string Hex(const std::string& digest) {
  return digest.rfind("sha256:", 0) == 0 ? digest.substr(7) : digest;
}

CachedImage ReadBundle(const std::string& dir) {
  CachedImage c;
  c.dir = dir;
  c.rootfs = dir + "/rootfs";
  if (auto meta = ReadFile(dir + "/image.json"); meta.ok()) {
    json j = json::parse(*meta, nullptr, false);
    if (j.is_object()) {
      c.digest = j.value("digest", "");
      c.reference = j.value("reference", "");
      c.bytes = j.value("bytes", int64_t(0));
    }
  }
  struct stat st;
  if (stat((dir + "/last-used").c_str(), &st) == 0) {
    c.last_used_ms = int64_t(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
  }
  if (auto cfg = ReadFile(dir + "/config.json"); cfg.ok()) {
    json j = json::parse(*cfg, nullptr, false);
    if (j.is_object() && j.contains("process") && j["process"].is_object()) {
      const json& p = j["process"];
      if (p.contains("env") && p["env"].is_array()) {
        for (const auto& e : p["env"]) {
          if (e.is_string()) c.env.push_back(e.get<std::string>());
        }
      }
      c.cwd = p.value("cwd", "");
      if (p.contains("user") && p["user"].is_object()) {
        c.uid = p["user"].value("uid", int64_t(0));
        c.gid = p["user"].value("gid", int64_t(0));
      }
    }
  }
  return c;
}

void Touch(const std::string& path) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) {
    futimens(fd, nullptr);
    close(fd);
  }
}

}  // namespace

BundleCache::BundleCache(std::string state_dir, int64_t max_bytes)
    : dir_(std::move(state_dir) + "/images/bundles"), max_bytes_(max_bytes) {}

bool BundleCache::Has(const std::string& digest) const {
  return IsDirectory(dir_ + "/" + Hex(digest) + "/rootfs");
}

Status BundleCache::Pull(const std::string& pinned, const std::string& tmp, bool plain_http,
                         const Credentials* credentials) {
  auto fail = [&](const std::string& what) {
    return Error(codes::kImagePullFailed, "image " + pinned + ": " + what)
        .Value(pinned)
        .Hint(credentials == nullptr
                  ? "check that skopeo and umoci are installed and the registry is reachable; a "
                    "registry that wants a login needs spec.imagePullSecrets (docs/image.md)"
                  : "check the credentials of spec.imagePullSecrets, that skopeo and umoci are "
                    "installed and the registry is reachable");
  };
  // What skopeo says never carries the password; masked anyway, with its Basic form.
  auto masked = [&](std::string text) {
    if (credentials == nullptr) return text;
    for (const std::string& secret :
         {credentials->password, Base64(credentials->username + ":" + credentials->password)}) {
      if (secret.empty()) continue;
      for (size_t at = text.find(secret); at != std::string::npos; at = text.find(secret, at)) {
        text.replace(at, secret.size(), "***");
      }
    }
    return text;
  };
  (void)RemoveAll(tmp);
  RSL_RETURN_IF_ERROR(MakeDirs(tmp));
  // gzip'd layers in the local layout: umoci (0.4.7) unpacks tar and tar+gzip only, so skopeo
  // recompresses zstd layers (gzip ones are copied as they are).
  std::vector<std::string> copy = {"skopeo", "copy", "--quiet", "--dest-compress-format", "gzip"};
  if (plain_http) copy.push_back("--src-tls-verify=false");
  std::string authfile = tmp + "/auth.json";
  if (credentials != nullptr) {
    // An authfile only we can read, for the length of one skopeo run: never a command line
    // (which `ps` shows) and never the user's own auth files.
    std::string registry = pinned.substr(0, pinned.find('/'));
    json auth = {
        {"auths",
         {{registry, {{"auth", Base64(credentials->username + ":" + credentials->password)}}}}}};
    std::string text = auth.dump();
    int fd = open(authfile.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    bool written = fd >= 0 && write(fd, text.data(), text.size()) == ssize_t(text.size());
    if (fd >= 0) close(fd);
    if (!written) {
      (void)unlink(authfile.c_str());
      return OsError(codes::kInternal, "cannot write the registry authfile", authfile, errno);
    }
    copy.push_back("--src-authfile");
    copy.push_back(authfile);
  }
  copy.push_back("docker://" + pinned);
  copy.push_back("oci:" + tmp + "/layout:image");
  int rc = RunTool(copy, tmp + "/skopeo.log");
  if (credentials != nullptr) (void)unlink(authfile.c_str());
  if (rc != 0) return fail("skopeo copy failed: " + masked(Tail(tmp + "/skopeo.log")));
  if (RunTool({"umoci", "unpack", "--image", tmp + "/layout:image", tmp + "/bundle"},
              tmp + "/umoci.log") != 0) {
    return fail("umoci unpack failed: " + Tail(tmp + "/umoci.log"));
  }
  int64_t bytes = TreeBytes(tmp + "/bundle/rootfs");
  std::string hex = Hex(pinned.substr(pinned.rfind('@') + 1));
  json meta = {{"digest", "sha256:" + hex}, {"reference", pinned}, {"bytes", bytes}};
  return WriteFileAtomic(tmp + "/bundle/image.json", meta.dump() + "\n");
}

Result<CachedImage> BundleCache::Ensure(const std::string& pinned, const std::string& digest,
                                        bool plain_http, const Credentials* credentials) {
  auto fail = [&](const std::string& what) {
    return Error(codes::kImagePullFailed, "image " + pinned + ": " + what)
        .Value(pinned)
        .Hint("check that skopeo and umoci are installed and the registry is reachable");
  };
  std::string hex = Hex(digest);
  if (hex.size() != 64 || hex.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return fail("not a sha256 digest: " + digest);
  }
  if (pinned.size() < digest.size() ||
      pinned.compare(pinned.size() - digest.size(), digest.size(), digest) != 0) {
    return fail("the reference does not end in its digest " + digest);
  }
  RSL_RETURN_IF_ERROR(MakeDirs(dir_));
  std::string bundle = dir_ + "/" + hex;
  std::string tmp = dir_ + "/.tmp-" + hex;
  bool pulled = false;
  int64_t pull_ms = 0;
  for (int round = 0;; ++round) {
    int pull_lock = -1;
    if (!IsDirectory(bundle + "/rootfs")) {
      // Pulled under the digest's own lock (one pull per digest, across processes too),
      // unpacked beside the cache and moved in whole below: a bundle that is there is complete.
      pull_lock = LockFile(dir_ + "/.pull-" + hex + ".lock", LOCK_EX);
      if (pull_lock < 0) {
        return OsError(codes::kInternal, "cannot lock the image's pull", dir_, errno);
      }
      if (!IsDirectory(bundle + "/rootfs")) {  // nobody pulled it while we waited
        int64_t t0 = NowMs();
        Status s = Pull(pinned, tmp, plain_http, credentials);
        if (!s.ok()) {
          (void)RemoveAll(tmp);
          close(pull_lock);
          return s.error();
        }
        pulled = true;
        pull_ms = NowMs() - t0;
      }
    }
    int lock = LockFile(dir_ + "/.lock", LOCK_EX);
    if (lock < 0) {
      if (pull_lock >= 0) close(pull_lock);
      return OsError(codes::kInternal, "cannot lock the image cache", dir_, errno);
    }
    Status moved = Status::Ok();
    if (IsDirectory(tmp + "/bundle") && rename((tmp + "/bundle").c_str(), bundle.c_str()) != 0) {
      moved =
          OsError(codes::kInternal, "cannot move the unpacked image into the cache", bundle, errno);
    }
    if (pull_lock >= 0) {
      (void)RemoveAll(tmp);
      close(pull_lock);
    }
    if (!moved.ok()) {
      close(lock);
      return moved.error();
    }
    if (!IsDirectory(bundle + "/rootfs")) {
      // Evicted between our look and the cache's lock: pulled again (twice at most).
      close(lock);
      if (round >= 2) return fail("it was evicted again as soon as it was pulled");
      continue;
    }
    Touch(bundle + "/last-used");
    CachedImage c = ReadBundle(bundle);
    c.in_use_fd = LockFile(bundle + "/in-use", LOCK_SH);
    c.in_use = true;
    c.pulled = pulled;
    c.pull_ms = pull_ms;
    auto pruned = PruneLocked(max_bytes_, c.digest);
    close(lock);
    if (!pruned.ok()) {
      if (c.in_use_fd >= 0) close(c.in_use_fd);
      return pruned.error();
    }
    return c;
  }
}

Result<std::vector<CachedImage>> BundleCache::List() const {
  std::vector<CachedImage> out;
  DIR* d = opendir(dir_.c_str());
  if (d == nullptr) {
    if (errno == ENOENT) return out;
    return OsError(codes::kInternal, "cannot read the image cache", dir_, errno);
  }
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.size() != 64 || !IsDirectory(dir_ + "/" + name + "/rootfs")) continue;
    CachedImage c = ReadBundle(dir_ + "/" + name);
    int fd = -1;
    c.in_use = InUse(c.dir, &fd);
    if (fd >= 0) close(fd);
    out.push_back(std::move(c));
  }
  closedir(d);
  std::sort(out.begin(), out.end(), [](const CachedImage& a, const CachedImage& b) {
    return a.last_used_ms != b.last_used_ms ? a.last_used_ms < b.last_used_ms : a.digest < b.digest;
  });
  return out;
}

Result<PruneResult> BundleCache::Prune(int64_t keep_bytes) {
  RSL_RETURN_IF_ERROR(MakeDirs(dir_));
  int lock = LockFile(dir_ + "/.lock", LOCK_EX);
  if (lock < 0) return OsError(codes::kInternal, "cannot lock the image cache", dir_, errno);
  auto r = PruneLocked(keep_bytes, "");
  close(lock);
  return r;
}

Result<PruneResult> BundleCache::PruneLocked(int64_t keep_bytes, const std::string& keep_digest) {
  auto all = List();
  if (!all.ok()) return all.error();
  PruneResult r;
  for (const auto& c : *all) r.kept_bytes += c.bytes;
  for (auto& c : *all) {  // least recently used first
    if (r.kept_bytes <= keep_bytes) break;
    if (c.digest == keep_digest) continue;
    int fd = -1;
    if (InUse(c.dir, &fd)) continue;
    // Held exclusively while it goes: moved aside first, so it is never half there.
    std::string gone = dir_ + "/.gone-" + Hex(c.digest) + "-" + std::to_string(NowMs());
    bool moved = rename(c.dir.c_str(), gone.c_str()) == 0;
    if (fd >= 0) close(fd);
    if (!moved) continue;
    (void)RemoveAll(gone);
    r.kept_bytes -= c.bytes;
    r.freed_bytes += c.bytes;
    c.in_use = false;
    r.removed.push_back(c);
  }
  return r;
}

}  // namespace rsl::image
