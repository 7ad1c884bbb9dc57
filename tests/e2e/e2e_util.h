// Helpers for the end-to-end tests: run real programs (the example's Python steps, seedctl,
// rsl-controller) and look at what they leave behind. Nothing here knows RSL's internals:
// the tests drive RSL only through its command line and files, as a user does.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/test_util.h"

namespace rsl::e2e {

//! Debian's interpreter, which has python3-numpy and python3-avro (the `python3` first on
//! PATH may be another one without them).
inline constexpr char kPython[] = "/usr/bin/python3";

std::string SourceDir();   //!< the repository (RSL_SOURCE_DIR)
std::string BinaryDir();   //!< the build tree (RSL_BINARY_DIR)
std::string ExampleDir();  //!< examples/fraud-detect
std::string SeedctlPath();
std::string ControllerPath();

struct CmdResult {
  int exit_code = -1;  //!< the exit status, or 128 + signal
  std::string output;  //!< stdout and stderr together
  double seconds = 0;  //!< wall time
  //! The last non-empty line of the output (where seedctl puts an error's code).
  std::string LastLine() const;
};

//! Runs argv (no shell) with the current environment plus `env`, in `cwd` if not empty, and
//! waits for it. Output is captured up to a few MiB.
CmdResult RunCmd(const std::vector<std::string>& argv,
                 const std::map<std::string, std::string>& env = {}, const std::string& cwd = "");

//! A program running in the background, its stdout+stderr going to `log_path`. Killed
//! (SIGKILL to its process group) on destruction if still running.
class Process {
 public:
  Process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
          const std::string& log_path);
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  pid_t pid() const { return pid_; }
  bool Running();
  //! Waits up to `timeout_s`; returns the exit status (128 + signal), or -1 on timeout.
  int Wait(double timeout_s);
  void Signal(int sig);  //!< to the whole process group
  std::string Output() const;

 private:
  pid_t pid_ = -1;
  int status_ = -1;
  std::string log_path_;
};

//! Polls `ready` every `interval_s` (default: a few milliseconds) until it returns true or
//! `timeout_s` passes. A `ready` that runs commands wants a longer interval: back to back
//! they load the machine whose timing the test measures.
bool WaitUntil(const std::function<bool()>& ready, double timeout_s, double interval_s = 0.002);

//! A fresh directory under $TMPDIR (or /tmp), 0755 and removed with everything in it on
//! destruction (base/test_util.h).
class TempDir : public rsl::testing::TempDir {
 public:
  TempDir();
};

std::string ReadText(const std::string& path);  //!< "" if unreadable
void WriteText(const std::string& path, const std::string& text);
std::string Sha256OfFile(const std::string& path);
//! Every regular file under `dir` (relative paths, sorted); empty if `dir` does not exist.
std::vector<std::string> ListFiles(const std::string& dir);

//! A free TCP port on 127.0.0.1 (bound and released; good enough for a test).
int FreePort();

//! Replaces the first occurrence of `from` in `text`; fails the test if absent.
std::string ReplaceOnce(const std::string& text, const std::string& from, const std::string& to);

using Clock = std::chrono::steady_clock;
inline double SecondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace rsl::e2e
