// rsl-controller's step logs (Service::OpenLogs): a batch step's attempt logs read as they grow,
// a serving step's replicas' logs, secret values masked in every line.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <unordered_map>
#include <unordered_set>

#include "api/controller_service.h"
#include "api/objects.h"
#include "base/codes.h"
#include "base/strings.h"

namespace rsl::api {

std::vector<std::string> SecretValuesOf(store::Store* store, const std::string& ns) {
  std::vector<std::string> out;
  auto secrets = store->ListConfigMaps(ns, /*secret=*/true);
  if (!secrets.ok()) return out;
  for (const auto& s : *secrets) {
    for (const auto& [k, v] : s.data) out.push_back(v);
  }
  // Longest first, so a secret that contains another is masked whole.
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.size() > b.size(); });
  return out;
}

namespace {

// What the step logs of one request share: the run, read once, and the namespace's secret
// values (read again whenever a running step is re-checked, so new secrets are masked too).
struct RunLogs {
  store::Store* store = nullptr;
  std::string workload_id;
  std::string run_id;
  std::string run_dir;
  std::string namespace_;
  std::vector<std::string> secrets;
};

// A running step is re-read from the store only when its log has nothing new, at most this
// often: right away, then backing off while it stays quiet, so a hundred followers of quiet
// steps cost a few store reads a second, and a finished step is noticed within kMaxRecheck.
constexpr auto kMinRecheck = std::chrono::milliseconds(100);
constexpr auto kMaxRecheck = std::chrono::milliseconds(2000);
constexpr int64_t kSeekProbeBytes = 4096;  // read to find the line start after a seek

class FileStepLog : public StepLog {
 public:
  FileStepLog(std::shared_ptr<RunLogs> run, std::string step, int attempts, bool terminal)
      : run_(std::move(run)), step_(std::move(step)), attempts_(attempts), terminal_(terminal) {}
  ~FileStepLog() override { CloseFile(); }

  const std::string& step() const override { return step_; }

  Status SeekTail(int64_t bytes) override {
    if (attempts_ == 0 || bytes <= 0) return Status::Ok();
    std::string path = engine::AttemptLogPath(run_->run_dir, step_, attempts_);
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      if (errno == ENOENT) return Status::Ok();  // nothing written yet
      return OsError(codes::kIoError, "cannot stat", path, errno);
    }
    // Earlier attempts are skipped whole; in the latest one, start after the first line end
    // at or past size - bytes (unless that is the file's start).
    part_ = attempts_;
    header_done_ = true;
    if (st.st_size <= bytes) return Status::Ok();
    int64_t from = st.st_size - bytes;
    CloseFile();
    file_off_ = from - 1;
    std::string probe;
    for (;;) {
      probe.clear();
      auto n = ReadFile(kSeekProbeBytes, &probe);
      if (!n.ok()) return n.error();
      size_t nl = probe.find('\n');
      if (nl != std::string::npos) {
        file_off_ += static_cast<int64_t>(nl) + 1;
        break;
      }
      file_off_ += *n;
      if (*n < kSeekProbeBytes) break;  // no line end before the end: start at the end
    }
    offset_ = file_off_;
    return Status::Ok();
  }

  Result<LogChunk> Next(int64_t max_bytes) override {
    LogChunk out;
    bool rechecked = false;
    // Nothing new from a running step: look at the store once (it may have ended or begun
    // another attempt); true when reading should go on.
    auto recheck = [&]() -> Result<bool> {
      if (terminal_ || rechecked || std::chrono::steady_clock::now() < next_recheck_) {
        return false;
      }
      rechecked = true;
      int before = attempts_;
      RSL_RETURN_IF_ERROR(Recheck());
      return terminal_ || attempts_ > before;
    };
    for (;;) {
      if (attempts_ == 0) {  // not started: no file yet
        auto again = recheck();
        if (!again.ok()) return again.error();
        if (*again) continue;
        out.finished = terminal_;
        break;
      }
      bool last = part_ >= attempts_;
      if (part_ > 1 && !header_done_) {
        out.data += "--- attempt " + std::to_string(part_) + " ---\n";
        header_done_ = true;
      }
      size_t before = out.data.size();
      int64_t want = std::max<int64_t>(max_bytes - static_cast<int64_t>(before), 1);
      auto n = ReadFile(want, &out.data);
      if (!n.ok()) return n.error();
      if (*n == 0 && !last) {  // an earlier attempt's file is complete
        CloseFile();
        ++part_;
        file_off_ = 0;
        header_done_ = false;
        if (out.data.empty()) continue;
        break;
      }
      file_off_ += *n;
      bool complete = !last || terminal_;
      bool full = *n == want;
      size_t nl = out.data.rfind('\n');
      size_t keep = out.data.size();
      if (!complete) {
        // While the step runs: whole lines only (a partial line comes whole later), unless a
        // full piece holds no line end at all.
        if (nl != std::string::npos) {
          keep = nl + 1;
        } else if (!full) {
          keep = before;
        }
      } else if (full && nl != std::string::npos && nl >= before) {
        keep = nl + 1;
      }
      file_off_ -= static_cast<int64_t>(out.data.size() - keep);
      out.data.resize(keep);
      if (complete && last && !full) {  // read to the end of a finished step's last file
        out.finished = true;
        CloseFile();
        break;
      }
      if (keep == before && !complete) {
        auto again = recheck();
        if (!again.ok()) return again.error();
        if (*again) {
          out.data.resize(before);
          continue;
        }
      }
      break;
    }
    if (!out.data.empty()) {  // it writes: when it falls quiet, look at the store at once
      next_recheck_ = {};
      backoff_ = {};
    }
    offset_ += static_cast<int64_t>(out.data.size());
    out.next_offset = offset_;
    out.data = MaskSecrets(std::move(out.data), run_->secrets);
    return out;
  }

 private:
  Status Recheck() {
    auto run = run_->store->GetRun(run_->workload_id);
    if (!run.ok()) return run.error();
    auto steps = run_->store->ListSteps(run->id);
    if (!steps.ok()) return steps.error();
    for (const auto& s : *steps) {
      if (s.name != step_) continue;
      attempts_ = std::max(attempts_, s.attempts);
      // A TIMED_OUT step whose attempt is still being stopped may still write.
      terminal_ =
          (spec::IsTerminal(s.phase) && !store::StepAttemptLive(s)) || spec::IsTerminal(run->phase);
    }
    run_->secrets = SecretValuesOf(run_->store, run_->namespace_);
    backoff_ = std::clamp(backoff_ * 2, std::chrono::milliseconds(kMinRecheck), kMaxRecheck);
    next_recheck_ = std::chrono::steady_clock::now() + backoff_;
    return Status::Ok();
  }

  // Appends up to `want` bytes of the current attempt's file from file_off_; 0 at its end (or
  // when the step has not written anything yet: the file appears with its first byte).
  Result<int64_t> ReadFile(int64_t want, std::string* out) {
    std::string path = engine::AttemptLogPath(run_->run_dir, step_, part_);
    if (fd_ < 0) {
      fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd_ < 0) {
        if (errno == ENOENT) return int64_t{0};
        return OsError(codes::kIoError, "cannot open", path, errno);
      }
    }
    size_t old = out->size();
    out->resize(old + static_cast<size_t>(want));
    int64_t got = 0;
    while (got < want) {
      ssize_t r =
          ::pread(fd_, out->data() + old + got, static_cast<size_t>(want - got), file_off_ + got);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) {
        out->resize(old);
        return OsError(codes::kIoError, "cannot read", path, errno);
      }
      if (r == 0) break;
      got += r;
    }
    out->resize(old + static_cast<size_t>(got));
    return got;
  }

  void CloseFile() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  std::shared_ptr<RunLogs> run_;
  std::string step_;
  int attempts_;
  bool terminal_;
  int part_ = 1;              // the attempt being read
  bool header_done_ = false;  // its "--- attempt N ---" line was handed out
  int64_t file_off_ = 0;      // in that attempt's file
  int64_t offset_ = 0;        // in the whole step log
  int fd_ = -1;
  std::chrono::steady_clock::time_point next_recheck_{};
  std::chrono::milliseconds backoff_{0};
};

// The replicas of attempt `attempt` of serving step `step` that wrote a log, and the
// generations (one per start: a restart is the next) of each:
// attempts/<step>.<attempt>.r<index>-<generation>.log (serve::ReplicaLaunch).
std::map<int, std::vector<int>> ReplicaLogs(const std::string& run_dir, const std::string& step,
                                            int attempt) {
  std::map<int, std::vector<int>> out;
  std::string dir = run_dir + "/attempts";
  std::string prefix = step + "." + std::to_string(attempt) + ".r";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (!StartsWith(name, prefix) || !EndsWith(name, ".log")) continue;
    std::string tag = name.substr(prefix.size(), name.size() - prefix.size() - 4);  // "<i>-<g>"
    size_t dash = tag.find('-');
    if (dash == std::string::npos || dash == 0 || dash + 1 >= tag.size()) continue;
    if (tag.find_first_not_of("0123456789-") != std::string::npos) continue;
    out[std::stoi(tag.substr(0, dash))].push_back(std::stoi(tag.substr(dash + 1)));
  }
  ::closedir(d);
  for (auto& [index, gens] : out) std::sort(gens.begin(), gens.end());
  return out;
}

// One replica's log: each generation's file in order, "--- restart <n> ---" before the n-th
// restart's. While the run lasts, only whole lines (so a secret value is masked whole); a
// follower re-reads the run from the store at most every kMaxRecheck to see it end.
class ReplicaStepLog : public StepLog {
 public:
  ReplicaStepLog(std::shared_ptr<RunLogs> run, std::string step, int attempt, int replica,
                 bool terminal)
      : run_(std::move(run)),
        step_(std::move(step)),
        name_(step_ + " replica " + std::to_string(replica)),
        attempt_(attempt),
        replica_(replica),
        terminal_(terminal) {}

  const std::string& step() const override { return name_; }

  Result<LogChunk> Next(int64_t max_bytes) override {
    LogChunk out;
    for (;;) {
      std::vector<int> gens = ReplicaLogs(run_->run_dir, step_, attempt_)[replica_];
      if (gen_ == 0 && !gens.empty()) gen_ = gens.front();
      if (gen_ == 0) {  // it wrote nothing yet
        RSL_RETURN_IF_ERROR(Recheck());
        out.finished = terminal_;
        break;
      }
      auto later = std::upper_bound(gens.begin(), gens.end(), gen_);
      std::string path = engine::AttemptPath(run_->run_dir, step_, attempt_) + ".r" +
                         std::to_string(replica_) + "-" + std::to_string(gen_) + ".log";
      std::string got;
      RSL_RETURN_IF_ERROR(ReadAt(path, off_, max_bytes, &got));
      if (!terminal_ && later == gens.end()) {  // it may still write: whole lines only
        size_t nl = got.rfind('\n');
        got.resize(nl == std::string::npos ? 0 : nl + 1);
      }
      off_ += int64_t(got.size());
      out.data += got;
      if (!got.empty()) break;
      if (later != gens.end()) {  // this generation is complete: the next one's turn
        gen_ = *later;
        off_ = 0;
        out.data += "--- restart " + std::to_string(++restarts_) + " ---\n";
        continue;
      }
      bool was_terminal = terminal_;
      RSL_RETURN_IF_ERROR(Recheck());
      if (terminal_ && !was_terminal) continue;  // its last partial line too
      out.finished = terminal_ && out.data.empty();
      break;
    }
    offset_ += int64_t(out.data.size());
    out.next_offset = offset_;
    out.data = MaskSecrets(std::move(out.data), run_->secrets);
    return out;
  }

 private:
  std::shared_ptr<RunLogs> run_;
  std::string step_;
  std::string name_;
  int attempt_;
  int replica_;
  bool terminal_;
  int gen_ = 0;  // the generation being read (0: none yet)
  int restarts_ = 0;
  int64_t off_ = 0;     // in its file
  int64_t offset_ = 0;  // in the whole replica log
  std::chrono::steady_clock::time_point next_recheck_{};

  // Up to `max` bytes of `path` from `off` (none when it does not exist yet).
  static Status ReadAt(const std::string& path, int64_t off, int64_t max, std::string* out) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      return errno == ENOENT ? Status::Ok() : OsError(codes::kIoError, "cannot open", path, errno);
    out->resize(size_t(std::max<int64_t>(max, 1)));
    ssize_t n;
    do {
      n = ::pread(fd, out->data(), out->size(), off);
    } while (n < 0 && errno == EINTR);
    int err = errno;
    ::close(fd);
    if (n < 0) {
      out->clear();
      return OsError(codes::kIoError, "cannot read", path, err);
    }
    out->resize(size_t(n));
    return Status::Ok();
  }

  // Whether the run ended, from the store at most every kMaxRecheck.
  Status Recheck() {
    if (terminal_ || std::chrono::steady_clock::now() < next_recheck_) return Status::Ok();
    next_recheck_ = std::chrono::steady_clock::now() + kMaxRecheck;
    auto r = run_->store->GetRun(run_->workload_id);
    if (!r.ok()) return r.status();
    terminal_ = spec::IsTerminal(r->phase);
    return Status::Ok();
  }
};

}  // namespace

Result<std::vector<std::unique_ptr<StepLog>>> ControllerService::OpenLogs(
    const std::string& id, const std::vector<std::string>& steps, std::optional<int> replica) {
  auto run = store_->GetRun(id);
  if (!run.ok()) return run.error();
  auto rows = store_->ListSteps(run->id);
  if (!rows.ok()) return rows.error();
  std::unordered_map<std::string, const store::Step*> by_name;
  for (const auto& st : *rows) by_name[st.name] = &st;
  auto shared = std::make_shared<RunLogs>();
  shared->store = store_;
  shared->workload_id = id;
  shared->run_id = run->id;
  shared->run_dir = run->run_dir;
  shared->namespace_ = run->namespace_;
  shared->secrets = SecretValues(run->namespace_);
  bool run_done = spec::IsTerminal(run->phase);
  // Which steps serve (their log is their replicas'), looked up once: a follower of every
  // step of a 10,000-step run asks for each.
  std::unordered_set<std::string> serving_steps;
  auto v = store_->GetVersion(run->workload_id);
  if (auto w = v.ok() ? Snapshot(*v) : nullptr) {
    for (const auto& s : w->pipeline.steps) {
      if (s.serving) serving_steps.insert(s.name);
    }
  }
  auto serving = [&](const std::string& name) { return serving_steps.count(name) > 0; };
  std::vector<std::unique_ptr<StepLog>> logs;
  logs.reserve(steps.size());
  for (const auto& name : steps) {
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      return Error(codes::kNotFound, "no step " + Quote(name) + " in " + id).Value(name);
    }
    const store::Step& st = *it->second;
    bool terminal = run_done || (spec::IsTerminal(st.phase) && !store::StepAttemptLive(st));
    if (!serving(name)) {
      if (replica) {
        return Error(codes::kInvalidArgument,
                     "step " + Quote(name) + " of " + id + " is a batch step: it has no replicas")
            .Path("replica")
            .Value(std::to_string(*replica))
            .Hint("leave out --replica");
      }
      logs.push_back(std::make_unique<FileStepLog>(shared, name, st.attempts, terminal));
      continue;
    }
    auto found = ReplicaLogs(run->run_dir, name, st.attempts);
    if (replica && !found.count(*replica)) {
      std::vector<std::string> have;
      for (const auto& [index, gens] : found) have.push_back(std::to_string(index));
      return Error(codes::kNotFound, "replica " + std::to_string(*replica) + " of step " +
                                         Quote(name) + " in " + id + " has no log")
          .Path("replica")
          .Value(std::to_string(*replica))
          .Hint(have.empty() ? "no replica has written anything yet"
                             : "replicas with a log: " + Join(have, ", "));
    }
    for (const auto& [index, gens] : found) {
      if (replica && index != *replica) continue;
      logs.push_back(std::make_unique<ReplicaStepLog>(shared, name, st.attempts, index, terminal));
    }
  }
  return logs;
}

}  // namespace rsl::api
