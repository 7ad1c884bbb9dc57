#include "backend/local.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string_view>
#include <thread>

#include "backend/container.h"
#include "backend/local_cgroup.h"
#include "backend/local_exit.h"
#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"
#include "image/cache.h"
#include "image/reference.h"
#include "sched/inventory.h"
#include "spec/names.h"

extern char** environ;

namespace rsl::backend {
namespace {

std::string SelfDir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  return Dirname(std::string(buf, size_t(n)));
}

std::string SanitizeId(const std::string& id) {
  std::string s = id;
  for (char& c : s) {
    if (!isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') c = '_';
  }
  return s;
}

// The supervisor's abstract socket name: state-dir paths can exceed sun_path's 108 bytes,
// so the name is a hash of the canonical path (and the uid: one namespace per machine).
std::string SocketName(const std::string& real_state_dir) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : real_state_dir) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char hex[17];
  snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
  return "rsl-supervisor-" + std::to_string(getuid()) + "-" + hex;
}

std::string DefaultStateDir() {
  const char* run = getenv("XDG_RUNTIME_DIR");
  if (run && *run) return std::string(run) + "/rsl";
  return "/tmp/rsl-" + std::to_string(getuid());
}

int64_t MonoMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

// Connecting: a supervisor that is starting (or exiting) is waited for this long in all.
constexpr int64_t kConnectTimeoutMs = 5000;
// Between two supervisor starts while none answers: the one just started needs a moment to
// take its lock (a second start would only see the lock and exit).
constexpr int64_t kRespawnMs = 500;
constexpr int kConnectRetryUs = 2000;

// The secret values the supervisor masks in the log: values too short to mask are left
// alone (spec::MaskedInLogs), so they do not damage ordinary words.
std::vector<std::string> MaskedSecretValues(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const auto& v : values) {
    if (spec::MaskedInLogs(v)) out.push_back(v);
  }
  return out;
}

class LocalBackend : public Backend {
 public:
  LocalBackend(LocalOptions opts, std::vector<sched::Node> nodes, CgroupBases cg, std::string shim,
               Isolation isolation)
      : opts_(std::move(opts)),
        nodes_(std::move(nodes)),
        cg_(std::move(cg)),
        shim_(std::move(shim)),
        cache_(opts_.state_dir, CacheMaxBytes()),
        isolation_(isolation),
        identities_(opts_.state_dir, isolation.uid_base) {}

  // The supervisor is started (or found) at the first Launch or Adopt: a backend that only
  // lists nodes starts nothing.
  Status Init() {
    wake_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wake_ < 0) return OsError(codes::kInternal, "eventfd", "", errno);
    reader_ = std::thread([this] { ReadLoop(); });
    return Status::Ok();
  }

  ~LocalBackend() override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      stopping_ = true;
      // A pull in flight is waited for (skopeo is not interrupted); it launches nothing now.
      pulls_done_.wait(lock, [this] { return active_pulls_ == 0; });
    }
    Wake();
    if (reader_.joinable()) reader_.join();
    // The supervisor keeps running our steps; a later backend adopts them.
    if (fd_ >= 0) close(fd_);
    if (wake_ >= 0) close(wake_);
  }

  std::string name() const override { return "local"; }

  //! Registry images run in containers with `runc` and `cinit` (rsl-cinit); unset: on the host.
  void SetContainerRuntime(std::string runc, std::string cinit) {
    runc_ = std::move(runc);
    cinit_ = std::move(cinit);
  }

  Result<std::vector<sched::Node>> ListNodes() override { return nodes_; }

  Status Launch(const LaunchSpec& spec) override {
    bool limited = spec.memory_bytes > 0 || spec.cpu_millis > 0;
    auto who = StepIdentityFor(isolation_, &identities_, spec.namespace_);
    if (!who.ok()) return who.error();
    auto image_it = spec.env.find("RSL_IMAGE_DIGEST");
    if (image_it != spec.env.end() && !runc_.empty()) {
      // An image not in the cache yet is pulled by a worker: the launch path never waits.
      if (!cache_.Has(image_it->second)) return QueuePull(spec, limited, *who, image_it->second);
      return LaunchContainer(spec, limited, *who, image_it->second);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (fd_ < 0) RSL_RETURN_IF_ERROR(ConnectLocked());
      std::string line = LaunchLine(spec, limited, socket_name_, *who);  // connected: named
      // Owned before it is sent: if the supervisor dies now, the attempt is reported lost.
      owned_[spec.attempt_id] = spec.exit_file;
      SendLocked(line);
    }
    if (limited && on_event) {
      std::string what = cg_.mechanism == "none" ? "no limits enforced (--limits none)"
                                                 : "limits via " + cg_.mechanism;
      on_event({spec.attempt_id, spec::EventReason::kLimitsApplied, what, spec.node});
    }
    return Status::Ok();
  }

  void Stop(const std::string& attempt_id, int64_t /*grace_ms*/, bool timed_out) override {
    std::string line = Dump({{"op", "stop"}, {"id", attempt_id}, {"timed_out", timed_out}});
    std::lock_guard<std::mutex> lock(mu_);
    if (auto p = pending_.find(attempt_id); p != pending_.end()) {
      // Still waiting for its image: it never starts (the pull goes on for the cache).
      AttemptExit e;
      e.attempt_id = attempt_id;
      e.kind = timed_out ? ExitKind::kTimedOut : ExitKind::kCancelled;
      e.message = "stopped while its image was being pulled";
      pending_.erase(p);
      local_reports_.push_back(std::move(e));
      Wake();
      return;
    }
    if (fd_ >= 0) SendLocked(line);
  }

  void Adopt(const LaunchSpec& spec) override {
    std::string line = Dump({{"op", "query"}, {"id", spec.attempt_id}});
    std::lock_guard<std::mutex> lock(mu_);
    if (fd_ < 0 && !ConnectLocked().ok()) {
      // No supervisor can be reached: what the attempt recorded, else it is lost.
      local_reports_.push_back(FromExitFile(spec.attempt_id, spec.exit_file));
      Wake();
      return;
    }
    queries_[spec.attempt_id] = spec.exit_file;
    SendLocked(line);
  }

 private:
  // The registry login of `spec` for `ref`'s registry, or null.
  static const image::Credentials* CredentialsFor(const LaunchSpec& spec,
                                                  const image::Reference& ref,
                                                  image::Credentials* out) {
    auto it = spec.pull_credentials.find(ref.registry);
    if (it == spec.pull_credentials.end()) return nullptr;
    *out = image::Credentials{it->second.username, it->second.password};
    return out;
  }

  // A container attempt whose image is not cached: ImagePulling now, the pull on a worker
  // thread (one per digest: attempts wanting a digest being pulled wait for that pull), then
  // ImagePulled and the launch, or the attempt fails IMAGE_PULL_FAILED. Until then the
  // attempt is pending: Stop ends it at once, and nothing of it reaches the supervisor.
  Status QueuePull(const LaunchSpec& spec, bool limited, const std::optional<StepIdentity>& who,
                   const std::string& digest) {
    auto ref = image::ParseReference(spec.env.at("RSL_IMAGE"));
    if (!ref.ok()) return ref.error();
    std::string pinned = ref->Name() + "@" + digest;
    bool first = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return Error(codes::kInternal, "the local backend is stopping");
      first = pulls_.count(digest) == 0;
    }
    if (on_event) {
      on_event({spec.attempt_id, spec::EventReason::kImagePulling,
                (first ? "pulling " : "waiting for the pull of ") + pinned +
                    " into the image cache (the step starts when it is unpacked)",
                spec.node});
    }
    std::lock_guard<std::mutex> lock(mu_);
    pending_[spec.attempt_id] = Pending{spec, limited, who};
    std::vector<std::string>& waiting = pulls_[digest];
    waiting.push_back(spec.attempt_id);
    if (waiting.size() > 1) return Status::Ok();  // that pull launches it too
    image::Credentials creds;
    const image::Credentials* c = CredentialsFor(spec, *ref, &creds);
    bool plain_http = ref->plain_http;
    ++active_pulls_;
    std::thread([this, digest, pinned, plain_http, c, creds] {
      PullThenLaunch(digest, pinned, plain_http, c ? &creds : nullptr);
    }).detach();
    return Status::Ok();
  }

  // On a puller thread: one pull of `digest`, then every attempt still waiting for it.
  void PullThenLaunch(const std::string& digest, const std::string& pinned, bool plain_http,
                      const image::Credentials* creds) {
    int64_t t0 = MonoMs();
    auto cached = cache_.Ensure(pinned, digest, plain_http, creds);
    int64_t took = MonoMs() - t0;
    std::vector<Pending> ready;
    {
      std::lock_guard<std::mutex> lock(mu_);
      std::vector<std::string> ids = std::move(pulls_[digest]);
      pulls_.erase(digest);
      for (const auto& id : ids) {
        auto p = pending_.find(id);
        if (p == pending_.end()) continue;  // stopped meanwhile
        if (stopping_ || !cached.ok()) {
          AttemptExit e;
          e.attempt_id = id;
          e.kind = stopping_ ? ExitKind::kNodeLost : ExitKind::kFailed;
          e.message = cached.ok() ? "the local backend stopped while its image was pulled"
                                  : "cannot start: " + cached.error().ToString();
          if (!cached.ok()) e.code = cached.error().code;
          pending_.erase(p);
          local_reports_.push_back(std::move(e));
          continue;
        }
        ready.push_back(p->second);  // erased by LaunchContainer when it sends the launch
      }
      if (!local_reports_.empty()) Wake();
    }
    for (const auto& p : ready) {
      if (on_event) {
        std::string what =
            cached->pulled ? "pulled and unpacked " + pinned + " in " + FormatSeconds(took) + " (" +
                                 std::to_string(cached->bytes / (1024 * 1024)) + " MiB)"
                           : pinned + " was cached meanwhile (waited " + FormatSeconds(took) + ")";
        on_event({p.spec.attempt_id, spec::EventReason::kImagePulled, what, p.spec.node});
      }
      Status s = LaunchContainer(p.spec, p.limited, p.who, digest, /*pending=*/true);
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(mu_);
        if (pending_.erase(p.spec.attempt_id) > 0) {
          AttemptExit e;
          e.attempt_id = p.spec.attempt_id;
          e.kind = ExitKind::kFailed;
          e.message = "cannot start: " + s.error().ToString();
          e.code = s.error().code;
          local_reports_.push_back(std::move(e));
          Wake();
        }
      }
    }
    // Held until the waiting attempts hold their own in-use locks: never evicted between.
    if (cached.ok() && cached->in_use_fd >= 0) close(cached->in_use_fd);
    std::lock_guard<std::mutex> lock(mu_);
    --active_pulls_;
    pulls_done_.notify_all();
  }

  static std::string FormatSeconds(int64_t ms) {
    char buf[32];
    snprintf(buf, sizeof(buf), "%.1f s", double(ms) / 1000.0);
    return buf;
  }

  // A step whose image came from a registry (admission recorded its digest): its bundle from
  // the image cache (pulled and unpacked once per digest), an OCI runtime config for this
  // attempt, and rsl-shim runs `runc run` in the attempt's cgroup (docs/image.md).
  // `pending`: the attempt waited for a pull (QueuePull); launched only if still pending.
  Status LaunchContainer(const LaunchSpec& spec, bool limited,
                         const std::optional<StepIdentity>& who, const std::string& digest,
                         bool pending = false) {
    auto ref = image::ParseReference(spec.env.at("RSL_IMAGE"));
    if (!ref.ok()) return ref.error();
    std::string pinned = ref->Name() + "@" + digest;
    image::Credentials creds;
    auto cached =
        cache_.Ensure(pinned, digest, ref->plain_http, CredentialsFor(spec, *ref, &creds));
    if (!cached.ok()) return cached.error();
    ContainerOptions co;
    co.runc = runc_;
    co.runc_root = opts_.state_dir + "/runc";
    co.containers_dir = opts_.state_dir + "/containers";
    co.cinit = cinit_;
    std::string cg_name = SanitizeId(spec.attempt_id);
    if (limited && cg_.mechanism == "cgroup v2" && !cg_.v2_mount.empty()) {
      co.cgroups_path = (cg_.v2 + "/" + cg_name).substr(cg_.v2_mount.size());
    } else if (limited && cg_.mechanism == "cgroup v1" && !cg_.mem_mount.empty()) {
      co.cgroups_path = (cg_.mem + "/" + cg_name).substr(cg_.mem_mount.size());
    }
    if (who) {
      co.uid = int64_t(who->uid);
      co.gid = int64_t(who->gid);
    }
    auto planned = PlanContainer(spec, *cached, co);
    if (!planned.ok()) {
      close(cached->in_use_fd);
      return planned.error();
    }
    ContainerPlan plan = std::move(*planned);
    Status written = MakeDirs(plan.bundle_dir);
    if (written.ok())
      written = WriteFileAtomic(plan.bundle_dir + "/config.json", plan.config.dump(1) + "\n");
    if (!written.ok()) {
      close(cached->in_use_fd);
      return written;
    }
    LaunchSpec run = spec;
    run.argv = plan.argv;
    run.read_dirs.clear();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (pending && pending_.count(spec.attempt_id) == 0) {
        close(cached->in_use_fd);  // stopped (and reported) while it waited
        return Status::Ok();
      }
      Status connected = fd_ < 0 ? ConnectLocked() : Status::Ok();
      if (!connected.ok()) {
        close(cached->in_use_fd);
        return connected;
      }
      // runc runs as us (root): the step's identity is the container's process.user, and
      // rsl-shim hands the attempt's directories to it as for a host step.
      std::string line =
          LaunchLine(run, limited, socket_name_, who, /*container=*/true, cached->dir + "/in-use");
      pending_.erase(spec.attempt_id);
      owned_[spec.attempt_id] = spec.exit_file;
      in_use_[spec.attempt_id] = cached->in_use_fd;
      SendLocked(line);
    }
    if (on_event) {
      on_event({spec.attempt_id, spec::EventReason::kStarted,
                "container " + plan.id + " (runc) from " + pinned + ", cached bundle " +
                    cached->dir + ", read-only rootfs" +
                    (plan.gpus.empty() ? "" : "; " + plan.gpus),
                spec.node});
      if (limited) {
        std::string what =
            cg_.mechanism == "none"
                ? "no limits enforced (--limits none)"
                : "limits via " + cg_.mechanism + " (container cgroup " + co.cgroups_path + ")";
        on_event({spec.attempt_id, spec::EventReason::kLimitsApplied, what, spec.node});
      }
    }
    return Status::Ok();
  }

  // REQUIRES: mu_ held.
  void ReleaseImage(const std::string& id) {
    auto it = in_use_.find(id);
    if (it == in_use_.end()) return;
    if (it->second >= 0) close(it->second);
    in_use_.erase(it);
  }

  static int64_t CacheMaxBytes() {
    const char* v = getenv("RSL_IMAGE_CACHE_BYTES");
    if (v == nullptr || *v == 0) return image::BundleCache::kDefaultMaxBytes;
    char* end = nullptr;
    long long n = strtoll(v, &end, 10);
    return end && *end == 0 && n >= 0 ? int64_t(n) : image::BundleCache::kDefaultMaxBytes;
  }

  // The launch message, written by hand like the engine's launch record: one per attempt on
  // the engine's loop thread. Strings are strict JSON; bytes that are not UTF-8 become U+FFFD
  // (AppendJsonString), as Dump does for the other messages.
  std::string LaunchLine(const LaunchSpec& spec, bool limited, const std::string& socket_name,
                         const std::optional<StepIdentity>& who, bool container = false,
                         const std::string& in_use = "") const {
    std::string line;
    line.reserve(1024);
    JsonObjectWriter w(&line);
    w.Str("op", "launch");
    w.Str("id", spec.attempt_id);
    w.StrList("argv", spec.argv);
    w.Str("workdir", spec.workdir);
    w.StrList("make_dirs", spec.make_dirs);
    w.Str("log", spec.log_path);
    w.Str("exit_file", spec.exit_file);
    w.Int("grace_ms", opts_.grace_ms);
    if (who) {
      w.Int("uid", int64_t(who->uid));
      w.Int("gid", int64_t(who->gid));
    }
    if (container) {
      w.Str("in_use", in_use);
    } else if (isolation_.mode == IsolationMode::kNamespace) {
      w.Int("userns", 1);
      w.StrList("hide", hidden_);
      w.StrList("ro", spec.read_dirs);
    }
    w.StrList("secrets", MaskedSecretValues(spec.secret_values));
    std::string& env = w.Key("env");
    env += '[';
    std::string kv;
    constexpr std::string_view kMarkerName = kMarkerVar.substr(0, kMarkerVar.size() - 1);
    for (const auto& [k, v] : spec.env) {
      if (k == kMarkerName) continue;  // ours, below: the marker KillLeftovers relies on
      if (env.back() != '[') env += ',';
      kv.assign(k).append(1, '=').append(v);
      AppendJsonString(&env, kv);
    }
    if (env.back() != '[') env += ',';
    kv.assign(kMarkerVar).append(Marker(socket_name, spec.attempt_id));
    AppendJsonString(&env, kv);
    env += ']';
    // A container under RLIMIT_AS would limit runc itself: its limits are linux.resources.
    if (cg_.mechanism != "none" && !(container && cg_.mechanism == "rlimit")) {
      if (spec.memory_bytes > 0) w.Int("memory", spec.memory_bytes);
      if (spec.cpu_millis > 0) w.Int("cpu_millis", spec.cpu_millis);
    }
    std::string cg_name = SanitizeId(spec.attempt_id);
    if (limited && cg_.mechanism == "cgroup v2") {
      w.Str("v2_cg", cg_.v2 + "/" + cg_name);
    } else if (limited && cg_.mechanism == "cgroup v1") {
      w.Str("mem_cg", cg_.mem + "/" + cg_name);
      if (!cg_.cpu.empty()) w.Str("cpu_cg", cg_.cpu + "/" + cg_name);
    }
    w.End();
    line += '\n';
    return line;
  }

  static std::string Dump(const nlohmann::json& msg) {
    // Non-UTF-8 bytes in argv/env are replaced (U+FFFD) rather than refused.
    return msg.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }

  void Wake() {
    uint64_t one = 1;
    (void)!write(wake_, &one, sizeof(one));
  }

  // REQUIRES: mu_ held. A failed send is not reported here: the reader sees the connection
  // end and reports every attempt we own.
  void SendLocked(const std::string& line) {
    size_t off = 0;
    while (fd_ >= 0 && off < line.size()) {
      ssize_t n = send(fd_, line.data() + off, line.size() - off, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      off += size_t(n);
    }
  }

  // Is the supervisor lock of our state directory held (a supervisor alive)? Tested without
  // taking it, so a supervisor starting at this moment is never turned away.
  bool SupervisorLockHeld() {
    std::string path = state_dir_ + "/rsl-supervisor.lock";
    int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return false;
    struct flock fl {};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    bool held = fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
    close(fd);
    return held;
  }

  Status StartSupervisor() {
    std::vector<std::string> args = {shim_,      "--serve",  "--state-dir",
                                     state_dir_, "--socket", socket_name_};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = -1;
    int rc = posix_spawn(&pid, shim_.c_str(), nullptr, nullptr, argv.data(), environ);
    if (rc != 0) return OsError(codes::kInternal, "cannot start rsl-shim", shim_, rc);
    waitpid(pid, nullptr, 0);  // it forks the supervisor and exits at once
    return Status::Ok();
  }

  // One connection attempt: connect, then the supervisor's hello (it accepted us, so it
  // will not exit idle while we are connected). Returns the fd or -1.
  int TryConnect() {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    size_t len = std::min(socket_name_.size(), sizeof(addr.sun_path) - 1);
    memcpy(addr.sun_path + 1, socket_name_.data(), len);
    socklen_t addr_len = socklen_t(offsetof(sockaddr_un, sun_path) + 1 + len);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), addr_len) != 0) {
      close(fd);
      return -1;
    }
    std::string hello;
    int64_t until = MonoMs() + kConnectTimeoutMs;
    while (hello.empty() || hello.back() != '\n') {
      pollfd p = {fd, POLLIN, 0};
      int64_t left = until - MonoMs();
      if (left <= 0 || poll(&p, 1, int(left)) <= 0) break;
      char c;
      if (read(fd, &c, 1) != 1) break;
      hello.push_back(c);
    }
    if (hello != "{\"op\":\"hello\"}\n") {
      close(fd);
      return -1;
    }
    return fd;
  }

  // REQUIRES: mu_ held, fd_ < 0. Connects to the state directory's supervisor, starting one
  // when none holds the lock.
  Status ConnectLocked() {
    if (socket_name_.empty()) {
      if (opts_.state_dir.empty()) opts_.state_dir = DefaultStateDir();
      RSL_RETURN_IF_ERROR(MakeDirs(opts_.state_dir));
      char real[PATH_MAX];
      if (!realpath(opts_.state_dir.c_str(), real)) {
        return OsError(codes::kIoError, "cannot resolve", opts_.state_dir, errno);
      }
      state_dir_ = real;
      socket_name_ = SocketName(state_dir_);
    }
    int64_t until = MonoMs() + kConnectTimeoutMs;
    int64_t last_start = -kRespawnMs;
    while (true) {
      int fd = TryConnect();
      if (fd >= 0) {
        fd_ = fd;
        Wake();  // the reader picks the new connection up
        return Status::Ok();
      }
      int64_t now = MonoMs();
      if (now > until) break;
      if (now - last_start >= kRespawnMs && !SupervisorLockHeld()) {
        RSL_RETURN_IF_ERROR(StartSupervisor());
        last_start = now;
      }
      usleep(kConnectRetryUs);
    }
    return Error(codes::kInternal, "cannot reach the step supervisor for " + state_dir_)
        .Value(shim_)
        .Hint("rsl-shim --serve did not answer on @" + socket_name_);
  }

  // Lost attempts' leftovers are killed first: a rescheduled attempt never overlaps them.
  void DeliverAll(const std::string& socket_name, std::vector<AttemptExit>* out) {
    KillLeftoversOfLost(socket_name, *out);
    for (auto& e : *out) Deliver(std::move(e));
    out->clear();
  }

  void Deliver(AttemptExit e) {
    e.node = sched::kLocalNodeName;
    if (on_exit) on_exit(e);
  }

  // Handles one message from the supervisor; returns what to report.
  void HandleLine(const std::string& line, std::vector<AttemptExit>* out) {
    auto msg = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!msg.is_object()) return;
    std::string op = msg.value("op", "");
    std::string id = msg.value("id", "");
    if (op == "usage") return ReportUsage(id, msg);  // touches nothing of ours: no lock
    std::lock_guard<std::mutex> lock(mu_);
    if (op == "exit") {
      auto it = owned_.find(id);
      if (it == owned_.end()) return;
      auto e = ParseExitRecord(msg.value("record", ""), it->second, id);
      if (e.ok()) e->workdir_empty = msg.value("workdir_empty", false);
      owned_.erase(it);
      ReleaseImage(id);
      out->push_back(e.ok() ? std::move(*e) : Lost(id));
    } else if (op == "state") {
      auto it = queries_.find(id);
      if (it == queries_.end()) return;
      if (msg.value("running", false)) {
        owned_[id] = it->second;  // its exit comes to us later
      } else {
        // Ended while nobody watched (its exit file tells how), or never started / its
        // supervisor died (kNodeLost: rescheduled without spending a retry).
        out->push_back(FromExitFile(id, it->second));
      }
      queries_.erase(it);
    }
  }

  // A live sample of an attempt we own (the supervisor sends them to the owner only).
  void ReportUsage(const std::string& id, const nlohmann::json& msg) {
    if (!on_usage || id.empty()) return;
    AttemptUsage u;
    u.attempt_id = id;
    u.usage.wall_ms = msg.value("wall_ms", int64_t(0));
    u.usage.cpu_ms = msg.value("cpu_ms", int64_t(0));
    u.usage.peak_memory_bytes = msg.value("peak_memory_bytes", int64_t(0));
    u.usage.peak_cpu_millicores = msg.value("peak_cpu_millicores", int64_t(0));
    on_usage(u);
  }

  // REQUIRES: mu_ held. The connection ended: the supervisor is gone and so are the steps
  // it ran (PR_SET_PDEATHSIG). What they recorded is reported, the rest is lost.
  void ConnectionLostLocked(int fd, std::vector<AttemptExit>* out) {
    if (fd_ == fd) fd_ = -1;
    close(fd);
    for (const auto& [id, exit_file] : owned_) out->push_back(FromExitFile(id, exit_file));
    for (const auto& [id, exit_file] : queries_) out->push_back(FromExitFile(id, exit_file));
    owned_.clear();
    queries_.clear();
  }

  void ReadLoop() {
    std::string in;
    std::string socket_name;  // set once, by the first connection
    int current = -1;
    while (true) {
      std::vector<AttemptExit> out;
      int fd;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) return;
        fd = fd_;
        out.swap(local_reports_);
        if (socket_name.empty()) socket_name = socket_name_;
      }
      if (fd != current) {
        in.clear();
        current = fd;
      }
      DeliverAll(socket_name, &out);
      pollfd p[2] = {{wake_, POLLIN, 0}, {fd, POLLIN, 0}};
      if (poll(p, fd >= 0 ? 2 : 1, -1) < 0) continue;
      if (p[0].revents & POLLIN) {
        uint64_t v;
        (void)!read(wake_, &v, sizeof(v));
      }
      if (fd < 0 || !(p[1].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      ssize_t n = read(fd, buf, sizeof(buf));
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) return;
        ConnectionLostLocked(fd, &out);
        in.clear();
      } else {
        in.append(buf, size_t(n));
        size_t start = 0, nl;
        while ((nl = in.find('\n', start)) != std::string::npos) {
          HandleLine(in.substr(start, nl - start), &out);
          start = nl + 1;
        }
        in.erase(0, start);
      }
      DeliverAll(socket_name, &out);
    }
  }

  LocalOptions opts_;
  std::vector<sched::Node> nodes_;
  CgroupBases cg_;
  std::string shim_;
  std::string runc_, cinit_;  // "" runc_: registry images run on the host (no runtime)
  image::BundleCache cache_;
  Isolation isolation_;
  IdentityMap identities_;
  // What a step isolated by a mount namespace sees empty: the state and runs directories.
  const std::vector<std::string> hidden_ = {opts_.state_dir, opts_.runs_dir};
  std::string state_dir_, socket_name_;  // GUARDED_BY(mu_); set by the first connection
  int wake_ = -1;
  std::thread reader_;
  std::mutex mu_;
  bool stopping_ = false;                     // GUARDED_BY(mu_)
  int fd_ = -1;                               // GUARDED_BY(mu_); closed by the reader
  std::map<std::string, std::string> owned_;  // GUARDED_BY(mu_): id -> exit_file
  // The in-use locks of the image bundles our container attempts run from (image/cache.h):
  // held from the launch until the exit is reported (rsl-shim holds its own meanwhile).
  std::map<std::string, int> in_use_;  // GUARDED_BY(mu_): id -> fd
  // Container attempts waiting for their image (QueuePull), and the pulls in flight.
  struct Pending {
    LaunchSpec spec;
    bool limited = false;
    std::optional<StepIdentity> who;
  };
  std::map<std::string, Pending> pending_;                 // GUARDED_BY(mu_): id -> attempt
  std::map<std::string, std::vector<std::string>> pulls_;  // GUARDED_BY(mu_): digest -> ids
  int active_pulls_ = 0;                                   // GUARDED_BY(mu_)
  std::condition_variable pulls_done_;
  std::map<std::string, std::string> queries_;  // GUARDED_BY(mu_): Adopt in flight
  std::vector<AttemptExit> local_reports_;      // GUARDED_BY(mu_)
};

}  // namespace

Result<std::unique_ptr<Backend>> NewLocalBackend(const LocalOptions& options) {
  std::string shim = options.shim_path;
  if (shim.empty()) {
    const char* env = getenv("RSL_SHIM");
    shim = env && *env ? env : SelfDir() + "/rsl-shim";
  }
  if (access(shim.c_str(), X_OK) != 0) {
    return Error(codes::kInternal, "cannot find the step supervisor rsl-shim at " + shim)
        .Value(shim)
        .Hint("install rsl-shim next to seedctl/rsl-controller, or set RSL_SHIM");
  }
  sched::Node probed = sched::ProbeLocalNode(options.nvidia_smi);
  std::vector<sched::Node> nodes = {probed};
  if (!options.node_file.empty()) {
    auto loaded = sched::LoadNodeFile(options.node_file, probed);
    if (!loaded.ok()) return loaded.error();
    nodes = std::move(*loaded);
  }
  static const std::vector<std::string> kModes = {"auto", "cgroup-v2", "cgroup-v1", "rlimit",
                                                  "none"};
  if (std::find(kModes.begin(), kModes.end(), options.limits) == kModes.end()) {
    return Error(codes::kInvalidArgument, "unknown limits mode " + Quote(options.limits))
        .Hint("use one of " + Join(kModes, ", "));
  }
  auto isolation = ParseIsolation(options.isolation);
  if (!isolation.ok()) return isolation.error();
  if (!options.runs_dir.empty()) {
    RSL_RETURN_IF_ERROR(CheckRunsDirReachable(options.runs_dir, *isolation));
  }
  LocalOptions opts = options;
  if (opts.state_dir.empty()) opts.state_dir = DefaultStateDir();
  auto backend = std::make_unique<LocalBackend>(opts, std::move(nodes),
                                                DetectCgroups(options.limits), shim, *isolation);
  // Registry images run in containers where runc is installed (RSL_CONTAINER_RUNTIME=none:
  // on the host, as before containers; =PATH: that runc) and rsl-cinit is beside rsl-shim.
  ContainerRuntime runtime = FindContainerRuntime(Dirname(shim));
  if (!runtime.runc.empty()) backend->SetContainerRuntime(runtime.runc, runtime.cinit);
  RSL_RETURN_IF_ERROR(backend->Init());
  return std::unique_ptr<Backend>(std::move(backend));
}

Result<std::unique_ptr<Backend>> NewLocalBackend(const BackendOptions& options) {
  LocalOptions lo;
  lo.state_dir = options.state_dir;
  lo.node_file = options.node_file;
  lo.isolation = options.isolation;
  lo.runs_dir = options.runs_dir;
  if (const char* l = getenv("RSL_LIMITS"); l && *l) lo.limits = l;
  return NewLocalBackend(lo);
}

}  // namespace rsl::backend
