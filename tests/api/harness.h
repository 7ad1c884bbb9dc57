// Test harness for the controller's integration tests: a real rsl-controller on an ephemeral
// loopback port with a temporary state directory, driven only through the real seedctl
// binary and HTTP.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace rsl::apitest {

struct CmdResult {
  int exit_code = -1;
  std::string out;
  std::string err;
  //! The last non-empty line of stderr (where seedctl prints the error code).
  std::string LastErrLine() const;
  std::string LastOutLine() const;
};

//! Runs argv[0] (a path) with `env` added to the environment, in `cwd`, and waits.
CmdResult RunCmd(const std::vector<std::string>& argv,
                 const std::map<std::string, std::string>& env, const std::string& cwd = "");

std::string SeedctlPath();
std::string ControllerPath();

class Controller {
 public:
  //! A fresh state directory under /tmp (removed by the destructor).
  Controller();
  ~Controller();

  //! Starts rsl-controller --listen 127.0.0.1:0 (or the previous port on restart, or the one
  //! given to UsePort); waits for its "listening on" line. Returns false (with the log, and
  //! exit_status() when it exited) when it does not come up.
  bool Start();
  void UsePort(int port) { port_ = port; }
  //! More rsl-controller flags for the next Start (e.g. --tls-cert F --tls-key F); with
  //! --tls-cert, server() is https://localhost:PORT.
  void UseArgs(std::vector<std::string> args) { extra_args_ = std::move(args); }
  //! Starts it with `--config path` and extra args alone (no --listen, no --state-dir): the
  //! file must give `listen: 127.0.0.1:0` and `stateDir: state_dir()`.
  void UseConfigFile(std::string path) { config_file_ = std::move(path); }
  //! The exit status of a controller that ended during Start(); -1 otherwise.
  int exit_status() const { return exit_status_; }
  //! kill -9, no cleanup: the crash case.
  void Kill9();
  //! SIGTERM and wait; returns its exit status.
  int Terminate();

  //! `seedctl token create --state-dir ... --namespace ns --role role`: the token.
  std::string CreateToken(const std::string& ns, const std::string& role,
                          const std::string& subject = "");
  //! seedctl with SEEDCTL_SERVER set and SEEDCTL_TOKEN = token ("" = none), in work_dir().
  CmdResult Seedctl(const std::string& token, const std::vector<std::string>& args);
  //! Polls `workload status -o json` until the phase is terminal or `timeout_ms` passes.
  std::string WaitPhase(const std::string& token, const std::string& id, int timeout_ms = 30000);

  const std::string& state_dir() const { return state_dir_; }
  const std::string& work_dir() const { return work_dir_; }
  const std::string& root() const { return root_; }
  std::string server() const {
    return (tls_ ? "https://localhost:" : "http://127.0.0.1:") + std::to_string(port_);
  }
  int port() const { return port_; }
  std::string Log() const;

 private:
  std::vector<std::string> extra_args_;
  std::string config_file_;
  bool tls_ = false;
  std::string root_;
  std::string state_dir_;
  std::string work_dir_;
  std::string log_path_;
  pid_t pid_ = -1;
  int port_ = 0;
  int exit_status_ = -1;
};

//! Writes `text` to `path`.
void WriteText(const std::string& path, const std::string& text);
std::string ReadText(const std::string& path);
//! Every regular file under `dir` (recursively).
std::vector<std::string> FilesUnder(const std::string& dir);
//! The id from `Workload submitted successfully!\nID: wl-...` output ("" if absent).
std::string IdFromSubmit(const std::string& out);

}  // namespace rsl::apitest
