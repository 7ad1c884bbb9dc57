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

Result<CachedImage> BundleCache::Ensure(const std::string& pinned, const std::string& digest,
                                        bool plain_http) {
  auto fail = [&](const std::string& what) {
    return Error(codes::kImagePullFailed, "image " + pinned + ": " + what)
        .Value(pinned)
        .Hint("check that skopeo and umoci are installed and the registry is reachable");
  };
  std::string hex = Hex(digest);
  if (hex.size() != 64 || hex.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return fail("not a sha256 digest: " + digest);
  }
  RSL_RETURN_IF_ERROR(MakeDirs(dir_));
  int lock = LockFile(dir_ + "/.lock", LOCK_EX);
  if (lock < 0) return OsError(codes::kInternal, "cannot lock the image cache", dir_, errno);
  std::string bundle = dir_ + "/" + hex;
  auto unlock = [&] { close(lock); };
  if (!IsDirectory(bundle + "/rootfs")) {
    // Pulled and unpacked beside the cache, renamed into place whole: a bundle that is
    // there is complete.
    std::string tmp = dir_ + "/.tmp-" + hex;
    (void)RemoveAll(tmp);
    if (auto s = MakeDirs(tmp); !s.ok()) {
      unlock();
      return s.error();
    }
    std::vector<std::string> copy = {"skopeo", "copy", "--quiet"};
    if (plain_http) copy.push_back("--src-tls-verify=false");
    copy.push_back("docker://" + pinned);
    copy.push_back("oci:" + tmp + "/layout:image");
    if (RunTool(copy, tmp + "/skopeo.log") != 0) {
      std::string why = Tail(tmp + "/skopeo.log");
      (void)RemoveAll(tmp);
      unlock();
      return fail("skopeo copy failed: " + why);
    }
    if (RunTool({"umoci", "unpack", "--image", tmp + "/layout:image", tmp + "/bundle"},
                tmp + "/umoci.log") != 0) {
      std::string why = Tail(tmp + "/umoci.log");
      (void)RemoveAll(tmp);
      unlock();
      return fail("umoci unpack failed: " + why);
    }
    int64_t bytes = TreeBytes(tmp + "/bundle/rootfs");
    json meta = {{"digest", "sha256:" + hex}, {"reference", pinned}, {"bytes", bytes}};
    Status s = WriteFileAtomic(tmp + "/bundle/image.json", meta.dump() + "\n");
    if (s.ok() && rename((tmp + "/bundle").c_str(), bundle.c_str()) != 0) {
      s = OsError(codes::kInternal, "cannot move the unpacked image into the cache", bundle, errno);
    }
    (void)RemoveAll(tmp);
    if (!s.ok()) {
      unlock();
      return s.error();
    }
  }
  Touch(bundle + "/last-used");
  CachedImage c = ReadBundle(bundle);
  c.in_use_fd = LockFile(bundle + "/in-use", LOCK_SH);
  c.in_use = true;
  auto pruned = PruneLocked(max_bytes_, c.digest);
  unlock();
  if (!pruned.ok()) {
    if (c.in_use_fd >= 0) close(c.in_use_fd);
    return pruned.error();
  }
  return c;
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
