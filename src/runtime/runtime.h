// One place that builds the stack every program runs on: the SQLite store, the backend, the
// hooks and the engine, from a state directory and a few options. rsl-controller and
// `seedctl run` both open a Runtime and keep only what is theirs (flags, the HTTP server,
// signal handling, printing).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "backend/backend.h"
#include "backend/factory.h"
#include "base/env.h"
#include "base/malloc.h"
#include "base/status.h"
#include "engine/engine.h"
#include "engine/hooks.h"
#include "model/model_checks.h"
#include "serve/serve_options.h"
#include "store/retention.h"
#include "store/store.h"

namespace rsl::serve {
class ServingBackend;
}

namespace rsl::runtime {

struct RuntimeOptions {
  //! Where the database, the hooks' registries and the supervisor live. Made private (0700)
  //! and absolute. Required.
  std::string state_dir;
  //! Where run directories live; "" = engine::DefaultRunsDir(state_dir). Made absolute.
  std::string runs_dir;
  std::string backend = "local";  //!< local | slurm (backend/factory.h)
  //! The backend's node file, Slurm conf and partition, and step isolation (who steps run
  //! as: auto | users | user:NAME | namespace | none). Its state_dir and runs_dir are
  //! ignored: the backend gets the two above, normalised.
  backend::BackendOptions backend_options;
  //! true: fsync every store commit; false: survive process crashes only (store.h).
  bool sync_full = true;
  //! true: the engine's transitions go through the store's transition log
  //! (store::StoreOptions::transition_log): the process then owns the state directory's store.
  bool transition_log = false;
  //! false: no data/model/cost/policy hooks, engine checks only (`seedctl run --no-hooks`).
  bool hooks = true;
  //! Take <state_dir>/controller.lock (one controller per state directory: a second one would
  //! run every step twice); held until the Runtime is destroyed.
  bool lock = false;
  //! The engine's clock and file system; nullptr: Env::Default(). Must outlive the Runtime.
  Env* env = nullptr;
  //! Called with the hooks and the opened store before the engine is built, to add or wrap
  //! hooks (the controller's metrics). May be empty.
  std::function<void(engine::Hooks*, store::Store*)> extend_hooks;
  //! Serving steps: the HAProxy executable, timings (serve/serve_options.h).
  serve::ServeOptions serve;
  //! How admission reaches the registries of images that are not registered host
  //! environments (--insecure-registry); its cache_dir defaults to <state_dir>/images.
  model::ImageAccess images;
  //! The price table the cost hook prices attempts with; "" = <state_dir>/prices.yaml (written
  //! with the defaults on first use). Open checks that it parses.
  std::string price_file;
};

//! Makes `options->state_dir` and `options->runs_dir` absolute and lexically normal, without
//! trailing slashes, and fills in the default runs directory. Touches nothing on disk.
//! Steps run in their own working directories and get paths below these (RSL_OUTPUT,
//! RSL_PROGRESS_FILE, ...), so both must be absolute.
Status NormalizePaths(RuntimeOptions* options);

//! The built stack. Owns store, backend and engine; the engine is built but not started
//! (callers start it when they are ready: the controller only once it has its port).
//! Destroying the Runtime destroys the engine (which stops it), then the backend and the
//! store, then releases the lock.
class Runtime {
 public:
  //! Normalises the paths, makes this process undumpable (nothing of it is open to a step
  //! that runs as the same user), makes the state directory private, takes the lock if
  //! asked, then opens the store, makes the backend, builds the hooks and the engine. Any
  //! failure is returned and leaves nothing running (the state directory may exist).
  static Result<std::unique_ptr<Runtime>> Open(RuntimeOptions options);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  //! The options as used: paths normalised.
  const RuntimeOptions& options() const { return options_; }
  const std::string& state_dir() const { return options_.state_dir; }
  const std::string& runs_dir() const { return options_.runs_dir; }
  store::Store* store() const { return store_.get(); }
  backend::Backend* backend() const { return backend_.get(); }
  engine::Engine* engine() const { return engine_.get(); }
  //! For a controller that exits to be restarted (SIGTERM): serving steps keep serving, their
  //! HAProxy and replicas left for the next start to adopt (serve::ServingBackend::LeaveRunning).
  //! Call after the engine stopped.
  void LeaveServingRunning();

  //! Writes `url` to <state_dir>/controller.addr (atomically), where the programs sharing
  //! this state directory find the controller serving it.
  Status PublishAddress(const std::string& url) const;

 private:
  Runtime() = default;

  RuntimeOptions options_;
  int lock_fd_ = -1;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<backend::Backend> backend_;
  serve::ServingBackend* serving_ = nullptr;  //!< backend_ itself
  std::unique_ptr<engine::Engine> engine_;
};

//! SIGTERM and SIGINT only write to a pipe that Wait() reads (the handler is
//! async-signal-safe). A handler, not a blocked mask, because steps and scheduler commands
//! inherit the mask but not the handler: they must stay stoppable by SIGTERM. At most one
//! per process; the handlers stay installed after it is destroyed (they then do nothing).
class StopSignals {
 public:
  static Result<std::unique_ptr<StopSignals>> Install();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  //! Blocks until SIGTERM or SIGINT arrives; returns it.
  int Wait();
  //! Waits at most `timeout_ms` for one; returns it, or 0 when none came.
  int WaitFor(int timeout_ms);

 private:
  StopSignals() = default;
};

//! For the programs above runtime (rsl-controller's loop, every 10 s): base/malloc.h.
using rsl::ReturnFreeMemory;

//! rsl-controller's retention flags as a policy: `keep_for` a duration ("7d"; "" = none);
//! errors: INVALID_ARGUMENT naming --retain-for.
Result<store::RetentionPolicy> RetentionFromFlags(int keep_versions, const std::string& keep_for);

//! Applies `policy` once to the runtime's store and runs directory (store/retention.h); says
//! what it collected on stdout and a failure on stderr: retention never stops a controller.
void ApplyRetention(Runtime* rt, const store::RetentionPolicy& policy);

}  // namespace rsl::runtime
