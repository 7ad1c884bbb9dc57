// rsl-shim's Supervisor: the local backend's step supervisor, ONE per state directory.
//
// Started (shim_main.cc: `rsl-shim --serve --state-dir DIR --socket NAME`) by the local
// backend (local.cc) when none runs for its state directory. It daemonizes (own session,
// chdir /, stdio on /dev/null, inherited fds closed), holds an OFD write lock on
// <DIR>/rsl-supervisor.lock for its whole life ("lock held" == "supervisor alive"; a second
// one started concurrently sees the lock and exits), is a child subreaper, and listens on the
// abstract unix socket NAME (only connections from its own uid are accepted). It outlives the
// engine: steps keep running while no engine is connected, and a later engine adopts them.
//
// Protocol: newline-delimited JSON. On accept the supervisor sends {"op":"hello"}. Then:
//   client -> {"op":"launch","id":..,"argv":[..],"env":["K=V",..],"workdir":..,
//              "make_dirs":[..],"log":..,"exit_file":..,"memory":N,"cpu_millis":N,
//              "v2_cg":..,"mem_cg":..,"cpu_cg":..,"grace_ms":N,"secrets":[..],
//              "in_use":..}                                                      (no reply)
//   ("in_use": a container attempt (argv is `runc ... run`, shim_container.h): the image
//   bundle's in-use file, shared-locked while the attempt lives; its uid/gid then only own
//   the attempt's directories, runc runs as us)
//   client -> {"op":"stop","id":..,"timed_out":bool}                              (no reply)
//   client -> {"op":"query","id":..}  -> {"op":"state","id":..,"running":bool}
//   supervisor -> {"op":"exit","id":..,"record":"<the exit record>"[,"workdir_empty":true]}
//                 (workdir_empty: the attempt left its working directory empty)
//   supervisor -> {"op":"usage","id":..,"wall_ms":N,"cpu_ms":N,"peak_memory_bytes":N,
//                  "peak_cpu_millicores":N}
//                 about every kUsageSampleMs (1 s) while the attempt runs (see SampleUsage);
//                 peak_cpu_millicores: the highest CPU rate between two samples so far
// "exit_file" names the attempt's exit record: it is appended to the journal beside it
// (see below), the file itself is not created.
// The exit message goes to the connection that owns the attempt: its launcher, or whoever
// queried it last. Before answering a query the supervisor reads everything already sent on
// every connection, so a launch written by an engine that died a moment ago is never missed.
//
// Per attempt: mkdir -p workdir, make_dirs and the parents of the log and exit files (the
// working directory of an ended attempt, when left empty, stays until it is renamed into a
// later attempt's directory instead of making a new one: see SpareDirs, shim_dirs.h);
// cgroup v2 / v1 limits (or RLIMIT_AS) as the backend asked; the step is forked as a new
// process group with PR_SET_PDEATHSIG(SIGKILL) (nothing runs unsupervised), its complete
// environment and stdout+stderr through a pipe to the log, which is created at the first
// byte of output (a silent step leaves no log file; with secrets, whole lines are written
// with the secret values masked). Stop: SIGTERM to the group now, SIGKILL after the grace
// period. When the step's main process ends, whatever is left of its group and cgroup is
// killed, the pipe is drained (until EOF, at most kPipeDrainMs), and the exit record
// (key=value lines ending with "end=1") is appended, before the exit message is sent, to
// the exit journal of the exit file's directory, <dirname(exit_file)>/exits:
//   "\nattempt=<basename(exit_file)>\n" + record, in one write() (see ExitJournals, shim_record.h)
// so a silent step creates no file at all, only its directories. The journal is open while
// attempts recording there are alive. ReadExitFile in local.cc reads the exit file if one
// exists (older supervisors, other writers), else the last complete record of its key in
// the journal; a record torn by a crash has no "end=1" and is ignored.
//
// The event loop never blocks on one attempt: timers (grace period, cgroup rmdir retries,
// usage samples, idle exit) are deadlines in the poll loop. With no client and no attempt for
// kIdleExitMs the supervisor exits.

#pragma once

#include <signal.h>
#include <sys/resource.h>

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backend/shim_dirs.h"
#include "backend/shim_launch.h"
#include "backend/shim_record.h"
#include "backend/shim_spawn.h"

namespace rsl::shim {

//! The supervisor's event loop and state. One per process; single-threaded.
class Supervisor {
 public:
  //! Serves `state_dir` on the abstract socket `socket_name` until idle (see above). 0 when
  //! it ended idle or another supervisor already serves the directory; 1 when the lock, the
  //! socket or the event loop failed. REQUIRES: daemonized, signals at their defaults.
  int Run(const std::string& state_dir, const std::string& socket_name);

 private:
  struct Conn {
    std::string in, out;
    bool watching_out = false;  // EPOLLOUT asked for (while `out` waits for room)
  };
  struct PendingRmdir {
    std::string dir;
    int tries_left = 0;
    int64_t next_ms = 0;
  };

  void Add(int fd, uint32_t events);
  void Accept();
  void OnConnReadable(int fd);
  void ReadConn(int fd);
  void CloseConn(int fd);
  void Send(int fd, const nlohmann::json& msg);
  void Flush(int fd);
  void Handle(int fd, const std::string& line);
  void DrainOtherConns(int except);
  void Launch(int fd, const nlohmann::json& msg);
  void Stop(const nlohmann::json& msg);
  void OnSignal();
  void OnPipe(Attempt* a);
  void OnExited(Attempt* a, int status, const rusage& ru);
  void Finish(Attempt* a);
  void FailBeforeStart(std::unique_ptr<Attempt> a, const std::string& why);
  void SendExit(const Attempt& a, const std::string& record, bool workdir_empty = false);
  void Timers();
  int64_t NextDeadline() const;
  void QueueRmdir(const std::string& dir);
  void SampleUsage(int64_t now);

  int epoll_ = -1, sfd_ = -1, listen_ = -1, devnull_ = -1;
  sigset_t blocked_;
  std::map<int, Conn> conns_;
  std::map<std::string, std::unique_ptr<Attempt>> attempts_;
  std::map<pid_t, Attempt*> by_pid_;
  std::map<int, Attempt*> by_pipe_;
  ExitJournals journals_;
  std::vector<PendingRmdir> rmdirs_;
  // Empty working directories of ended attempts: the next attempts get them by rename
  // instead of mkdir.
  SpareDirs spares_;
  bool draining_ = false;
  pid_t pid_ = 0;
  ProgramCache programs_;
  ChildStacks stacks_;  // for children started without waiting for their exec
};

}  // namespace rsl::shim
