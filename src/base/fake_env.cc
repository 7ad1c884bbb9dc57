#include "base/fake_env.h"

#include <cerrno>
#include <chrono>

#include "base/codes.h"

namespace rsl {
namespace {

// "/a//b/" -> "/a/b"; a relative path is taken from "/".
std::string Normalize(const std::string& path) {
  std::string out = "/";
  for (char c : path) {
    if (c == '/' && out.back() == '/') continue;
    out += c;
  }
  if (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

std::string Parent(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}

// What every path under `dir` starts with: they are one contiguous range of a map ordered
// by path, from this prefix on ("/a-b" sorts between "/a" and "/a/", never inside it).
std::string ChildPrefix(const std::string& dir) { return dir == "/" ? "/" : dir + "/"; }

}  // namespace

void ManualClock::WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                            int64_t deadline_ms) {
  if (Now() >= deadline_ms) return;
  cv.wait_for(lock, std::chrono::milliseconds(1));
}

FakeEnv::FakeEnv(int64_t start_ms) : ManualTimeEnv<Env>(start_ms) {
  nodes_["/"] = Node{true, "", 0755};
}

void FakeEnv::SetProcessScript(ProcessScript script) {
  std::lock_guard<std::mutex> lock(mu_);
  script_ = std::move(script);
}

std::vector<ProcessSpec> FakeEnv::processes_run() {
  std::lock_guard<std::mutex> lock(mu_);
  return run_;
}

std::vector<std::string> FakeEnv::Tree() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& [path, node] : nodes_) {
    if (path != "/") out.push_back(node.dir ? path + "/" : path);
  }
  return out;
}

FakeEnv::Node* FakeEnv::Find(const std::string& path) {
  auto it = nodes_.find(path);
  return it == nodes_.end() ? nullptr : &it->second;
}

bool FakeEnv::HasChildren(const std::string& dir) {
  std::string prefix = ChildPrefix(dir);
  auto it = nodes_.upper_bound(prefix);
  if (dir == "/") return it != nodes_.end();
  return it != nodes_.end() && it->first.compare(0, prefix.size(), prefix) == 0;
}

Result<std::string> FakeEnv::ReadFile(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  Node* n = Find(Normalize(path));
  if (!n) return OsError(codes::kIoError, "cannot open", path, ENOENT);
  if (n->dir) return OsError(codes::kIoError, "cannot read", path, EISDIR);
  return n->data;
}

Status FakeEnv::WriteFile(const std::string& path, const std::string& contents, bool) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string p = Normalize(path);
  Node* parent = Find(Parent(p));
  if (!parent) return OsError(codes::kIoError, "cannot create", path, ENOENT);
  if (!parent->dir) return OsError(codes::kIoError, "cannot create", path, ENOTDIR);
  Node& n = nodes_[p];
  if (n.dir) return OsError(codes::kIoError, "cannot create", path, EISDIR);
  n.data = contents;
  return Status::Ok();
}

Status FakeEnv::Rename(const std::string& from, const std::string& to) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string f = Normalize(from), t = Normalize(to);
  Node* src = Find(f);
  Node* dest_parent = Find(Parent(t));
  if (!src || !dest_parent) return RenameError(from, to, ENOENT);
  if (!dest_parent->dir) return RenameError(from, to, ENOTDIR);
  if (f == t) return Status::Ok();
  if (src->dir && t.compare(0, f.size() + 1, f + "/") == 0) return RenameError(from, to, EINVAL);
  if (Node* dest = Find(t)) {
    if (src->dir && !dest->dir) return RenameError(from, to, ENOTDIR);
    if (!src->dir && dest->dir) return RenameError(from, to, EISDIR);
    if (dest->dir && HasChildren(t)) return RenameError(from, to, ENOTEMPTY);
    nodes_.erase(t);
  }
  std::map<std::string, Node> moved;
  moved[t] = std::move(*src);
  nodes_.erase(f);
  std::string prefix = f + "/";
  for (auto it = nodes_.lower_bound(prefix); it != nodes_.end();) {
    if (it->first.compare(0, prefix.size(), prefix) != 0) break;
    moved[t + it->first.substr(f.size())] = std::move(it->second);
    it = nodes_.erase(it);
  }
  nodes_.merge(moved);
  return Status::Ok();
}

Result<std::vector<std::string>> FakeEnv::ListDir(const std::string& dir) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string d = Normalize(dir);
  Node* n = Find(d);
  if (!n) return OsError(codes::kIoError, "cannot list", dir, ENOENT);
  if (!n->dir) return OsError(codes::kIoError, "cannot list", dir, ENOTDIR);
  std::string prefix = ChildPrefix(d);
  std::vector<std::string> names;
  for (auto it = nodes_.upper_bound(prefix); it != nodes_.end(); ++it) {
    if (it->first.compare(0, prefix.size(), prefix) != 0) break;
    std::string rest = it->first.substr(prefix.size());
    if (!rest.empty() && rest.find('/') == std::string::npos) names.push_back(rest);
  }
  return names;
}

Status FakeEnv::RemoveAll(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string p = Normalize(path);
  if (p == "/") return OsError(codes::kIoError, "cannot remove", path, EBUSY);
  nodes_.erase(p);
  std::string prefix = p + "/";
  for (auto it = nodes_.lower_bound(prefix); it != nodes_.end();) {
    if (it->first.compare(0, prefix.size(), prefix) != 0) break;
    it = nodes_.erase(it);
  }
  return Status::Ok();
}

Status FakeEnv::MakeDirs(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string p = Normalize(path);
  for (size_t end = 1; end <= p.size(); ++end) {
    if (end < p.size() && p[end] != '/') continue;
    std::string part = p.substr(0, end);
    auto [it, made] = nodes_.try_emplace(part, Node{true, "", 0755});
    if (!made && !it->second.dir) {
      return OsError(codes::kIoError, "cannot create directory", path, EEXIST);
    }
  }
  return Status::Ok();
}

Status FakeEnv::Chmod(const std::string& path, uint32_t mode) {
  std::lock_guard<std::mutex> lock(mu_);
  Node* n = Find(Normalize(path));
  if (!n) return OsError(codes::kIoError, "cannot chmod", path, ENOENT);
  n->mode = mode & 07777;
  return Status::Ok();
}

Status FakeEnv::OpenDirTo(const std::string& dir, uint32_t bits) {
  std::lock_guard<std::mutex> lock(mu_);
  Node* n = Find(Normalize(dir));
  if (n && n->dir) n->mode |= bits;
  return Status::Ok();
}

Result<FileInfo> FakeEnv::Stat(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  Node* n = Find(Normalize(path));
  if (!n) return OsError(codes::kNotFound, "cannot stat", path, ENOENT);
  FileInfo info;
  info.type = n->dir    ? FileInfo::Type::kDirectory
              : n->link ? FileInfo::Type::kLink
                        : FileInfo::Type::kRegular;
  info.mode = n->mode;
  info.size = n->dir ? 0 : static_cast<int64_t>(n->data.size());
  info.device = 1;
  return info;
}

Status FakeEnv::SyncFile(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!Find(Normalize(path))) return OsError(codes::kIoError, "cannot open", path, ENOENT);
  return Status::Ok();
}

Status FakeEnv::SyncDir(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  Node* n = Find(Normalize(path));
  if (!n) return OsError(codes::kIoError, "cannot open directory", path, ENOENT);
  if (!n->dir) return OsError(codes::kIoError, "cannot open directory", path, ENOTDIR);
  return Status::Ok();
}

bool FakeEnv::PathExists(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  return Find(Normalize(path)) != nullptr;
}

bool FakeEnv::IsDirectory(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  Node* n = Find(Normalize(path));
  return n && n->dir;
}

Status FakeEnv::Symlink(const std::string& target, const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string p = Normalize(path);
  Node* parent = Find(Parent(p));
  if (!parent || !parent->dir) return OsError(codes::kIoError, "cannot create link", path, ENOENT);
  if (Find(p)) return OsError(codes::kConflict, "cannot create link", path, EEXIST);
  nodes_[p] = Node{false, target, 0777, true};
  return Status::Ok();
}

class FakeEnv::Lock : public FileLock {
 public:
  Lock(FakeEnv* env, std::string path) : env_(env), path_(std::move(path)) {}
  ~Lock() override {
    std::lock_guard<std::mutex> lock(env_->mu_);
    env_->locked_.erase(path_);
  }

 private:
  FakeEnv* env_;
  std::string path_;
};

Result<std::unique_ptr<FileLock>> FakeEnv::LockFile(const std::string& path, int64_t) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string p = Normalize(path);
  Node* parent = Find(Parent(p));
  if (!parent || !parent->dir) return OsError(codes::kNotFound, "cannot open lock", path, ENOENT);
  if (!Find(p)) nodes_[p] = Node{false, "", 0600};
  if (!locked_.insert(p).second) {
    return Error(codes::kConflict, "lock " + path + " is held by another process").Path(path);
  }
  return std::unique_ptr<FileLock>(std::make_unique<Lock>(this, p));
}

Result<ProcessResult> FakeEnv::RunProcess(const ProcessSpec& spec) {
  ProcessScript script;
  {
    std::lock_guard<std::mutex> lock(mu_);
    run_.push_back(spec);
    script = script_;
  }
  std::string prog = spec.argv.empty() ? "" : spec.argv[0];
  if (!script) return OsError(codes::kIoError, "cannot run", prog, ENOENT);
  return script(spec);
}

}  // namespace rsl
