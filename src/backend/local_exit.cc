// Exit records of local attempts: the file the supervisor writes per attempt, or its record
// in the supervisor's exit journal beside it (shim_record.h), read back after a restart; and the
// attempts whose supervisor is gone, and what they left running.
#include "backend/local_exit.h"

#include <dirent.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string_view>

#include "backend/local.h"
#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"

namespace rsl::backend {
namespace {

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

constexpr size_t kMaxExitFileBytes = 1 << 20;
constexpr size_t kMaxJournalBytes = size_t(1) << 31;

// The record of `key` in an exit journal (shim_record.h, ExitJournals): records are
// "\nattempt=<key>\n" + key=value lines + "end=1"; the last complete one of `key` counts. A
// record torn by a crash never has its "end=1" line (the next record starts on a line of its
// own), so it is skipped. `seen`: some record of `key`, complete or not, was found.
std::optional<std::string_view> FindJournalRecord(std::string_view text, std::string_view key,
                                                  bool* seen) {
  constexpr std::string_view kKey = "attempt=";
  std::optional<std::string_view> found;
  bool in_record = false;  // inside a record of `key`
  size_t record_start = 0;
  for (size_t pos = 0; pos <= text.size();) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    if (line.substr(0, kKey.size()) == kKey) {
      in_record = line.substr(kKey.size()) == key;
      record_start = nl + 1;
      *seen |= in_record;
    } else if (in_record && line == "end=1") {
      found = text.substr(record_start, nl - record_start);
      in_record = false;
    }
    pos = nl + 1;
  }
  return found;
}

}  // namespace

Result<AttemptExit> ReadExitFile(const std::string& path, const std::string& attempt_id) {
  auto own = ReadFileIfExists(path, kMaxExitFileBytes);
  if (!own.ok()) return own.error();
  if (*own) return ParseExitRecord(**own, path, attempt_id);
  // No file of its own: the supervisor's journal beside it.
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  std::string journal = dir + "exits";
  auto text = ReadFileIfExists(journal, kMaxJournalBytes);
  if (!text.ok()) return text.error();
  bool seen = false;
  std::optional<std::string_view> record;
  if (*text) record = FindJournalRecord(**text, std::string_view(path).substr(dir.size()), &seen);
  if (record) return ParseExitRecord(std::string(*record), journal, attempt_id);
  if (seen) {
    return Error(codes::kInternal, "garbled exit record of " + path + " in " + journal).Value(path);
  }
  return Error(codes::kIoError, "no exit record " + path).Value(path);
}

Result<AttemptExit> ParseExitRecord(const std::string& text, const std::string& path,
                                    const std::string& attempt_id) {
  std::map<std::string, std::string> kv;
  for (const auto& line : Split(text, '\n')) {
    size_t eq = line.find('=');
    if (eq != std::string::npos) kv[line.substr(0, eq)] = line.substr(eq + 1);
  }
  // "end=1" comes last: a record cut short by a crash is garbled, not a wrong exit.
  if (!kv.count("exit_code") || !kv.count("wall_ms") || kv["end"] != "1") {
    return Error(codes::kInternal, "garbled exit record " + path).Value(path);
  }
  AttemptExit e;
  e.attempt_id = attempt_id;
  e.exit_code = atoi(kv["exit_code"].c_str());
  e.signal = atoi(kv["signal"].c_str());
  e.usage.wall_ms = atoll(kv["wall_ms"].c_str());
  e.usage.cpu_ms = atoll(kv["cpu_ms"].c_str());
  e.usage.peak_memory_bytes = atoll(kv["peak_memory_bytes"].c_str());
  e.usage.peak_cpu_millicores = atoll(kv["peak_cpu_millicores"].c_str());
  std::string limits = kv["limits"];
  std::string how =
      e.signal ? "killed by " + SignalName(e.signal) : "exit code " + std::to_string(e.exit_code);
  if (kv["stop"] == "timeout") {
    e.kind = ExitKind::kTimedOut;
    e.message = "stopped: time limit exceeded (" + how + ")";
  } else if (kv["stop"] == "cancel") {
    e.kind = ExitKind::kCancelled;
    e.message = "stopped on request (" + how + ")";
  } else if (kv["oom"] == "1") {
    e.kind = ExitKind::kOomKilled;
    e.message = "memory limit exceeded, OOM-killed (" + limits + ")";
  } else if (e.exit_code == 0) {
    e.kind = ExitKind::kSucceeded;
    e.message = "exit code 0";
  } else {
    e.kind = ExitKind::kFailed;
    e.message = how;
  }
  if (!kv["message"].empty()) e.message += "; " + kv["message"];
  return e;
}

AttemptExit Lost(const std::string& attempt_id) {
  AttemptExit e;
  e.attempt_id = attempt_id;
  e.kind = ExitKind::kNodeLost;
  e.message = "the attempt's supervisor is gone and left no exit record";
  return e;
}

std::string Marker(const std::string& socket_name, const std::string& attempt_id) {
  return socket_name + "/" + attempt_id;
}

// SIGKILLs every process whose environment names one of `keys` (Marker()) as its attempt:
// what a step left running when its supervisor was killed. The step's main process dies with the
// supervisor (PR_SET_PDEATHSIG), but its background children do not, and nobody else would
// ever stop them. Each candidate is pinned by a pidfd before its environment is read, so a
// pid reused meanwhile is never signalled. Returns how many were killed. A process that
// dropped the variable (env -i) is not found.
int KillLeftovers(const std::set<std::string>& keys) {
  if (keys.empty()) return 0;
  DIR* d = opendir("/proc");
  if (!d) return 0;
  int killed = 0;
  pid_t self = getpid();
  while (const dirent* e = readdir(d)) {
    char* end = nullptr;
    long pid = strtol(e->d_name, &end, 10);
    if (pid <= 1 || *end != '\0' || pid == self) continue;
    int pidfd = int(syscall(SYS_pidfd_open, pid_t(pid), 0));
    // Unreadable (another user's, gone) or empty (a zombie, a kernel thread): not ours.
    auto env = ReadFile("/proc/" + std::to_string(pid) + "/environ");
    bool ours = false;
    for (size_t at = 0; env.ok() && at < env->size() && !ours;) {
      size_t nul = env->find('\0', at);
      if (nul == std::string::npos) nul = env->size();
      std::string_view var(env->data() + at, nul - at);
      if (var.substr(0, kMarkerVar.size()) == kMarkerVar) {
        ours = keys.count(std::string(var.substr(kMarkerVar.size()))) > 0;
      }
      at = nul + 1;
    }
    if (ours) {
      // Through the pidfd where there is one: it still means the process we read.
      int rc = pidfd >= 0 ? int(syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0))
                          : kill(pid_t(pid), SIGKILL);
      if (rc == 0) ++killed;
    }
    if (pidfd >= 0) close(pidfd);
  }
  closedir(d);
  return killed;
}

// Kills the leftovers of every attempt in `exits` reported lost (only Lost() makes
// kNodeLost here), until a pass finds none: a main process may still be forking when the
// supervisor's socket closes (its PR_SET_PDEATHSIG comes a moment later).
void KillLeftoversOfLost(const std::string& socket_name, const std::vector<AttemptExit>& exits) {
  std::set<std::string> keys;
  for (const auto& e : exits) {
    if (e.kind == ExitKind::kNodeLost) keys.insert(Marker(socket_name, e.attempt_id));
  }
  for (int pass = 0; pass < 10 && KillLeftovers(keys) > 0; ++pass) usleep(10000);
}

// The exit file if there is a complete one, else kNodeLost.
AttemptExit FromExitFile(const std::string& attempt_id, const std::string& exit_file) {
  auto exit = ReadExitFile(exit_file, attempt_id);
  return exit.ok() ? std::move(*exit) : Lost(attempt_id);
}

}  // namespace rsl::backend
