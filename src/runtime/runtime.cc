#include "runtime/runtime.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <iostream>

#include "base/codes.h"
#include "base/file.h"
#include "govern/price.h"
#include "runtime/backends.h"
#include "runtime/default_hooks.h"
#include "serve/serving_backend.h"
#include "spec/quantity.h"

namespace rsl::runtime {
namespace {

Result<std::string> AbsolutePath(const std::string& path) {
  std::error_code ec;
  std::string out = std::filesystem::absolute(path, ec).lexically_normal().string();
  if (ec) return OsError(codes::kIoError, "cannot make absolute", path, ec.value());
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

int g_stop_pipe[2] = {-1, -1};

void OnStopSignal(int sig) {
  int saved = errno;
  if (g_stop_pipe[1] >= 0) (void)!::write(g_stop_pipe[1], &sig, sizeof(sig));
  errno = saved;
}

// One controller per state directory: a second one would run every step twice.
Status LockStateDir(const std::string& state_dir, int* fd) {
  std::string path = state_dir + "/controller.lock";
  *fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (*fd < 0) return OsError(codes::kIoError, "cannot open", path, errno);
  if (::flock(*fd, LOCK_EX | LOCK_NB) != 0) {
    return Error(codes::kConflict,
                 "another rsl-controller is running on state directory " + state_dir)
        .Hint("stop it first, or use another --state-dir");
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(*fd, 0) == 0) (void)!::write(*fd, pid.data(), pid.size());
  return Status::Ok();
}

}  // namespace

Status NormalizePaths(RuntimeOptions* o) {
  if (o->state_dir.empty()) {
    return Error(codes::kInvalidArgument, "no state directory").Hint("pass --state-dir DIR");
  }
  auto state_dir = AbsolutePath(o->state_dir);
  if (!state_dir.ok()) return state_dir.status();
  o->state_dir = *state_dir;
  auto runs_dir =
      AbsolutePath(o->runs_dir.empty() ? engine::DefaultRunsDir(o->state_dir) : o->runs_dir);
  if (!runs_dir.ok()) return runs_dir.status();
  o->runs_dir = *runs_dir;
  return Status::Ok();
}

Result<std::unique_ptr<Runtime>> Runtime::Open(RuntimeOptions options) {
  std::unique_ptr<Runtime> rt(new Runtime());
  if (Status s = NormalizePaths(&options); !s.ok()) return s.error();
  rt->options_ = std::move(options);
  const RuntimeOptions& o = rt->options_;
  // Nothing of this process (its memory, its open database, its files through /proc) is
  // open to a step that runs as the same user (--step-isolation namespace).
  ::prctl(PR_SET_DUMPABLE, 0);
  if (Status s = MakePrivateDir(o.state_dir); !s.ok()) return s.error();
  if (o.lock) {
    if (Status s = LockStateDir(o.state_dir, &rt->lock_fd_); !s.ok()) return s.error();
  }

  store::StoreOptions so;
  so.sync_full = o.sync_full;
  so.transition_log = o.transition_log;
  auto store = store::OpenSqliteStore(o.state_dir, so);
  if (!store.ok()) return store.error();
  rt->store_ = std::move(*store);

  backend::BackendOptions bo = o.backend_options;
  bo.state_dir = o.state_dir;
  bo.runs_dir = o.runs_dir;
  auto backend = MakeAnyBackend(o.backend, bo);
  if (!backend.ok()) return backend.error();
  if (o.backend == "k8s") {
    // Pods are not reachable from a local HAProxy: the k8s backend serves itself (a
    // Deployment, a Service and an HPA per serving step).
    rt->backend_ = std::move(*backend);
  } else {
    // Serving steps run as replica sets behind HAProxy on top of whichever backend runs steps.
    serve::ServeOptions serve_options = o.serve;
    auto serving =
        std::make_unique<serve::ServingBackend>(std::move(*backend), std::move(serve_options));
    rt->serving_ = serving.get();
    rt->backend_ = std::move(serving);
  }

  model::ImageAccess images = o.images;
  images.cluster_images = o.backend == "k8s";  // the cluster pulls images itself
  if (!o.price_file.empty()) {
    // A table that does not parse would only show as cost errors at each attempt's end.
    Result<govern::PriceTable> prices = govern::LoadPriceTableFile(o.price_file);
    if (!prices.ok()) return prices.error();
  }
  engine::Hooks hooks = o.hooks ? DefaultHooks(o.state_dir, images, o.price_file) : engine::Hooks{};
  if (o.extend_hooks) o.extend_hooks(&hooks, rt->store_.get());
  engine::EngineOptions eo;
  eo.state_dir = o.state_dir;
  eo.runs_dir = o.runs_dir;
  eo.env = o.env;
  rt->engine_ =
      std::make_unique<engine::Engine>(rt->store_.get(), rt->backend_.get(), std::move(hooks), eo);
  return rt;
}

Status Runtime::PublishAddress(const std::string& url) const {
  return WriteFileAtomic(options_.state_dir + "/controller.addr", url + "\n");
}

void Runtime::LeaveServingRunning() {
  if (serving_) serving_->LeaveRunning();
}

Runtime::~Runtime() {
  engine_.reset();
  backend_.reset();
  store_.reset();
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

Result<std::unique_ptr<StopSignals>> StopSignals::Install() {
  if (g_stop_pipe[0] >= 0) return Error(codes::kInternal, "stop signals already installed");
  if (::pipe2(g_stop_pipe, O_CLOEXEC) != 0) {
    return OsError(codes::kIoError, "cannot create", "stop pipe", errno);
  }
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  return std::unique_ptr<StopSignals>(new StopSignals());
}

StopSignals::~StopSignals() {
  int write_end = g_stop_pipe[1];
  g_stop_pipe[1] = -1;
  ::close(write_end);
  ::close(g_stop_pipe[0]);
  g_stop_pipe[0] = -1;
}

int StopSignals::WaitFor(int timeout_ms) {
  pollfd p{g_stop_pipe[0], POLLIN, 0};
  int n = ::poll(&p, 1, timeout_ms);
  if (n <= 0) return 0;  // timeout, or EINTR: the caller comes back
  return Wait();
}

Result<store::RetentionPolicy> RetentionFromFlags(int keep_versions, const std::string& keep_for) {
  store::RetentionPolicy policy;
  policy.keep_versions = keep_versions;
  if (!keep_for.empty()) {
    auto ms = spec::ParseDurationMs(keep_for);
    if (!ms.ok()) {
      Error e = ms.error();  // a flag, not a spec: INVALID_ARGUMENT
      e.code = codes::kInvalidArgument;
      return e.Path("--retain-for");
    }
    policy.keep_for_ms = *ms;
  }
  return policy;
}

void ApplyRetention(Runtime* rt, const store::RetentionPolicy& policy) {
  if (!policy.enabled()) return;
  auto done = store::Collect(rt->store(), Env::Default(), rt->options().runs_dir, policy);
  if (!done.ok()) {
    std::cerr << "rsl-controller: retention: " << done.error().ToString() << std::endl;
  } else if (!done->run_ids.empty()) {
    std::cout << "rsl-controller: retention collected " << done->run_ids.size()
              << " finished runs (" << done->bytes_freed << " bytes of run directories)"
              << std::endl;
  }
}

int StopSignals::Wait() {
  int sig = 0;
  while (::read(g_stop_pipe[0], &sig, sizeof(sig)) < 0 && errno == EINTR) {
  }
  return sig;
}

}  // namespace rsl::runtime
