// HAProxy in front of a serving step's replicas: the process (started with a minimal
// configuration that never changes: one frontend and one empty backend, plus an admin unix
// socket) and a client of its runtime API that adds, enables, drains and deletes servers
// while it runs. The configuration is never rewritten and HAProxy is never reloaded.
//
// Lifetime: HAProxy is not tied to the process that started it. A controller that dies
// leaves it serving (its replicas keep running too); the next one adopts it (Adopt) by the
// pid and directory it recorded, or starts a new one on the same port.
//
// Threading: HaproxyRuntime may be used from several threads at once (one connection per
// command, nothing else shared); HaproxyProcess is not thread-safe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace rsl::serve {

//! Debian's haproxy (installed by scripts/install-deps.sh).
inline constexpr char kDefaultHaproxy[] = "/usr/sbin/haproxy";
//! The names in the configuration: frontend "fe", backend "be" (one step per HAProxy).
inline constexpr char kBackendName[] = "be";
inline constexpr char kFrontendName[] = "fe";

struct ProxyConfig {
  std::string bind_host = "0.0.0.0";
  int port = 0;             //!< the endpoint
  std::string socket_path;  //!< the runtime API (admin level, mode 0600)
};

//! The configuration text for `config`: HTTP mode, least-connections balancing, L7 retries of
//! requests that never reached a replica (connection refused, empty answer) on another one,
//! no server connection kept idle (so a drained server has nothing left open).
std::string ProxyConfigText(const ProxyConfig& config);

//! One row of `show stat` (its CSV: pxname, svname, ..., scur, stot, hrsp_5xx, status).
struct StatRow {
  std::string proxy;   //!< pxname
  std::string server;  //!< svname: FRONTEND, BACKEND or a server's name
  int64_t scur = 0;    //!< current sessions
  int64_t stot = 0;    //!< sessions so far
  int64_t hrsp_5xx = 0;
  std::string status;  //!< UP, DOWN, MAINT, DRAIN, OPEN, no check ...
};

//! Parses `show stat` output (the "# pxname,svname,..." header names the columns). Errors:
//! INTERNAL when the header lacks a column it needs.
Result<std::vector<StatRow>> ParseShowStat(const std::string& csv);

//! A client of one HAProxy's runtime API socket.
class HaproxyRuntime {
 public:
  explicit HaproxyRuntime(std::string socket_path) : socket_path_(std::move(socket_path)) {}

  //! Sends one command, returns HAProxy's whole answer. Errors: IO_ERROR (cannot connect).
  Result<std::string> Command(const std::string& command);
  //! `add server be/<name> host:port` (HAProxy creates it in maintenance), then nothing else.
  Status AddServer(const std::string& name, const std::string& host, int port);
  //! `set server be/<name> state ready|drain|maint`.
  Status SetState(const std::string& name, const std::string& state);
  //! `del server be/<name>` (it must be in maintenance with no session left).
  Status DelServer(const std::string& name);
  Result<std::vector<StatRow>> ShowStat();
  const std::string& socket_path() const { return socket_path_; }

 private:
  //! Errors: the command's answer when it is not empty and not a success message.
  Status Expect(const std::string& command);
  std::string socket_path_;
};

//! A running HAProxy: started here (a child) or adopted (left by a controller that died).
class HaproxyProcess {
 public:
  //! Writes <dir>/haproxy.cfg, starts `haproxy -db -f` on it with its output in
  //! <dir>/haproxy.log, and waits until the runtime socket answers. Errors:
  //! SERVING_PROXY_MISSING (no executable), IO_ERROR (did not start: the log's last lines).
  static Result<std::unique_ptr<HaproxyProcess>> Start(const std::string& haproxy,
                                                       const std::string& dir,
                                                       const ProxyConfig& config);
  //! The HAProxy that Start(_, dir, {.., socket}) left running as `pid`: it must still be that
  //! program (its command line names <dir>/haproxy.cfg, so a reused pid is not taken) and
  //! answer on `socket`. Errors: NOT_FOUND (gone, or another program now), IO_ERROR (no answer).
  static Result<std::unique_ptr<HaproxyProcess>> Adopt(pid_t pid, const std::string& dir,
                                                       const std::string& socket);
  ~HaproxyProcess();  //!< Stop()s
  //! SIGTERM (SIGKILL after a second) and waits until it is gone (reaped when it is our
  //! child). Idempotent.
  void Stop();
  //! Lets it run on after this object goes (a controller that exits for a restart leaves
  //! it to the next one, which adopts it). pid() stays. Idempotent.
  void Release() { released_ = true; }
  pid_t pid() const { return pid_; }
  const std::string& dir() const { return dir_; }
  HaproxyRuntime& runtime() { return runtime_; }
  //! Whether `pid` no longer runs (no such process, or a zombie not reaped yet).
  static bool Gone(pid_t pid);

 private:
  HaproxyProcess(pid_t pid, std::string dir, std::string socket, bool child)
      : pid_(pid), dir_(std::move(dir)), child_(child), runtime_(std::move(socket)) {}
  pid_t pid_;
  std::string dir_;
  bool released_ = false;  //!< Release(): the destructor leaves it running
  bool child_;  //!< ours to reap (waitpid); an adopted one is reaped by whoever inherited it
  HaproxyRuntime runtime_;
};

//! A TCP port free on `host` now (bound to port 0 and released). Errors: IO_ERROR.
Result<int> FreePort(const std::string& host = "127.0.0.1");
//! Whether `port` can be bound on all addresses now.
bool PortFree(int port);

}  // namespace rsl::serve
