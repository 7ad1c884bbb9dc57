// rsl-controller: the daemon. Store + engine + backend behind the HTTP/JSON API
// (docs/api.md). Recovers unfinished runs on start; on SIGTERM/SIGINT stops accepting
// requests and stops the engine, leaving running steps to be adopted by the next start.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "api/audit.h"
#include "api/auth.h"
#include "api/controller_service.h"
#include "api/metrics.h"
#include "api/metrics_hooks.h"
#include "api/server.h"
#include "backend/factory.h"
#include "base/codes.h"
#include "base/file.h"
#include "cli/default_hooks.h"
#include "engine/engine.h"
#include "store/store.h"

namespace {

struct Flags {
  std::string listen = "127.0.0.1:7070";
  std::string state_dir;
  std::string node_file;
  std::string tokens_file;
  std::string backend = "local";
  std::string slurm_conf;
  std::string slurm_partition;
  std::string step_isolation = "auto";
  std::string runs_dir;
};

int g_stop_pipe[2] = {-1, -1};

void OnStopSignal(int sig) {
  int saved = errno;
  (void)!::write(g_stop_pipe[1], &sig, sizeof(sig));  // async-signal-safe
  errno = saved;
}

int Fail(const rsl::Error& e) {
  std::cerr << "rsl-controller: " << e.ToString() << "\n" << e.code << "\n";
  return 1;
}

// One controller per state directory: a second one would run every step twice.
rsl::Status LockStateDir(const std::string& state_dir, int* fd) {
  std::string path = state_dir + "/controller.lock";
  *fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (*fd < 0) return rsl::OsError(rsl::codes::kIoError, "cannot open", path, errno);
  if (::flock(*fd, LOCK_EX | LOCK_NB) != 0) {
    return rsl::Error(rsl::codes::kConflict,
                      "another rsl-controller is running on state directory " + state_dir)
        .Hint("stop it first, or use another --state-dir");
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(*fd, 0) == 0) (void)!::write(*fd, pid.data(), pid.size());
  return rsl::Status::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app{"rsl-controller: the RSL daemon (REST API, engine, store)", "rsl-controller"};
  app.add_option("--listen", f.listen, "HOST:PORT to listen on (port 0: any free port)");
  app.add_option("--state-dir", f.state_dir, "state directory (database, runs, logs)")->required();
  app.add_option("--node-file", f.node_file, "declared nodes and devices (local backend)");
  app.add_option("--tokens", f.tokens_file, "static tokens file: token,subject,role,ns1;ns2");
  app.add_option("--backend", f.backend, "local | slurm");
  app.add_option("--slurm-conf", f.slurm_conf, "SLURM_CONF for --backend slurm");
  app.add_option("--slurm-partition", f.slurm_partition, "partition for --backend slurm");
  app.add_option(
      "--step-isolation", f.step_isolation,
      "who steps run as: auto | users | user:NAME | namespace | none (docs/security.md)");
  app.add_option("--runs-dir", f.runs_dir,
                 "where run directories live (default: <state-dir>-runs)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    if (rc != 0) std::cerr << "INVALID_ARGUMENT\n";
    return rc;
  }

  std::string host;
  int port = 0;
  rsl::Status st = rsl::api::ParseListen(f.listen, &host, &port);
  if (!st.ok()) return Fail(st.error());
  // Nothing of this process (its memory, its open database, its files through /proc) is
  // open to a step that runs as the same user (--step-isolation namespace).
  ::prctl(PR_SET_DUMPABLE, 0);
  st = rsl::MakePrivateDir(f.state_dir);
  if (!st.ok()) return Fail(st.error());
  // Absolute, because steps run in their own working directories and get paths below the
  // runs directory (RSL_OUTPUT, RSL_PROGRESS_FILE, ...).
  f.state_dir = std::filesystem::absolute(f.state_dir).lexically_normal().string();
  while (f.state_dir.size() > 1 && f.state_dir.back() == '/') f.state_dir.pop_back();
  f.runs_dir = f.runs_dir.empty()
                   ? rsl::engine::DefaultRunsDir(f.state_dir)
                   : std::filesystem::absolute(f.runs_dir).lexically_normal().string();
  int lock_fd = -1;
  st = LockStateDir(f.state_dir, &lock_fd);
  if (!st.ok()) return Fail(st.error());

  // SIGTERM/SIGINT only write to a pipe that main waits on. A handler (not a blocked mask)
  // because steps and scheduler commands inherit the mask but not the handler: they must
  // stay stoppable by SIGTERM.
  if (::pipe2(g_stop_pipe, O_CLOEXEC) != 0) {
    return Fail(rsl::OsError(rsl::codes::kIoError, "cannot create", "stop pipe", errno));
  }
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);

  auto store = rsl::store::OpenSqliteStore(f.state_dir);
  if (!store.ok()) return Fail(store.error());
  rsl::backend::BackendOptions bo;
  bo.state_dir = f.state_dir;
  bo.node_file = f.node_file;
  bo.slurm_conf = f.slurm_conf;
  bo.slurm_partition = f.slurm_partition;
  bo.isolation = f.step_isolation;
  bo.runs_dir = f.runs_dir;
  auto backend = rsl::backend::MakeBackend(f.backend, bo);
  if (!backend.ok()) return Fail(backend.error());
  auto tokens = rsl::api::TokenStore::Open(f.state_dir);
  if (!tokens.ok()) return Fail(tokens.error());
  if (!f.tokens_file.empty()) {
    st = (*tokens)->LoadTokensFile(f.tokens_file);
    if (!st.ok()) return Fail(st.error());
  }
  auto audit = rsl::api::AuditLog::Open(f.state_dir);
  if (!audit.ok()) return Fail(audit.error());

  rsl::api::Metrics metrics;
  rsl::api::DescribeControllerMetrics(&metrics);
  rsl::engine::Hooks hooks = rsl::cli::DefaultHooks(f.state_dir);
  rsl::api::InstrumentHooks(&hooks, &metrics, store->get());
  rsl::engine::EngineOptions eo;
  eo.state_dir = f.state_dir;
  eo.runs_dir = f.runs_dir;
  rsl::engine::Engine engine(store->get(), backend->get(), std::move(hooks), eo);
  rsl::api::ControllerService service(store->get(), &engine, backend->get(), &metrics, f.state_dir);
  rsl::api::ApiServer server(&service, tokens->get(), audit->get(), &metrics);
  // The address first: a controller that cannot have its port starts and recovers nothing.
  st = server.Listen(host, port);
  if (!st.ok()) return Fail(st.error());
  st = engine.Start();
  if (!st.ok()) return Fail(st.error());
  st = engine.Recover();
  if (!st.ok()) return Fail(st.error());
  server.Serve();
  // Tests and scripts read this line to learn the port (with --listen HOST:0).
  std::cout << "rsl-controller " << rsl::api::kControllerVersion << " listening on http://" << host
            << ":" << server.port() << " (state " << f.state_dir << ", backend "
            << (*backend)->name() << ")" << std::endl;
  (void)rsl::WriteFileAtomic(f.state_dir + "/controller.addr",
                             "http://" + host + ":" + std::to_string(server.port()) + "\n");

  int sig = 0;
  while (::read(g_stop_pipe[0], &sig, sizeof(sig)) < 0 && errno == EINTR) {
  }
  std::cout << "rsl-controller: " << strsignal(sig) << ", shutting down" << std::endl;
  server.Stop();
  engine.Stop(/*stop_steps=*/false);
  ::close(lock_fd);
  std::cout << "rsl-controller: stopped" << std::endl;
  return 0;
}
