// Ending a run: publishing outputs (atomic: all at the end, recorded as "committing" before
// the first rename and "committed" after the manifest; non-atomic: each step as it
// succeeds) or discarding staging (keepOnFailure steps kept and named), then the terminal
// record, the run's event and the AfterRun hooks. Every step here is idempotent, so a
// recovered engine simply does it again.
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <set>

#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"
#include "engine/engine_internal.h"

namespace rsl::engine {
namespace {

constexpr char kManifest[] = "_RSL_COMMIT";  // data::kCommitManifest: readers' commit point

int64_t TreeBytes(const std::string& dir) {
  std::error_code ec;
  int64_t total = 0;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec)) total += static_cast<int64_t>(it->file_size(ec));
  }
  return total;
}

// The run's own output directory (no data.output): only this engine writes there.
std::string RunOutputs(const RunCtx* r) { return r->run.run_dir + "/outputs"; }

// A published output directory opens to its readers: an isolated step made its staging 0700
// for itself (backend/identity.h). Not recursive: the files keep the modes the step gave
// them. Through an O_NOFOLLOW descriptor, so a link in its place is never followed.
void OpenToReaders(const std::string& dir) {
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st {};
  if (fstat(fd, &st) == 0 && (st.st_mode & 0755) != 0755) (void)fchmod(fd, (st.st_mode & 07777) | 0755);
  close(fd);
}

}  // namespace

std::string LocalPathOf(const std::string& uri, OutputPublisher* publisher) {
  if (StartsWith(uri, "file://")) return uri.substr(7);
  if (uri.find("://") == std::string::npos) return uri;
  return publisher ? publisher->LocalPath(uri) : "";
}

void CrashPoint(const char* point) {
  static const char* wanted = getenv("RSL_TEST_CRASH_AT");
  if (wanted && strcmp(wanted, point) == 0) raise(SIGKILL);
}

std::string Engine::Impl::OutputRoot(RunCtx* r, bool* fallback) {
  *fallback = false;
  if (r->workload.data.output && !r->workload.data.output->uri.empty()) {
    const std::string& uri = r->workload.data.output->uri;
    std::string local = LocalPathOf(uri, hooks_.publisher.get());
    if (!local.empty()) return local;
    if (hooks_.publisher && hooks_.publisher->Handles(uri)) return uri;
    *fallback = true;
  }
  return RunOutputs(r);
}

Status Engine::Impl::PublishStep(RunCtx* r, int i, std::string* published, int64_t* bytes,
                                 bool sync) {
  const std::string& name = r->workload.pipeline.steps[size_t(i)].name;
  std::string staging = StagingDir(r->run.run_dir, name, r->records[size_t(i)].attempts);
  bool fallback = false;
  std::string root = OutputRoot(r, &fallback);
  if (root.find("://") != std::string::npos) {
    std::string dest = root + "/" + name;
    if (!PathExists(staging)) RSL_RETURN_IF_ERROR(MakeDirs(staging));
    *bytes = TreeBytes(staging);
    RSL_RETURN_IF_ERROR(hooks_.publisher->Publish(staging, dest));
    *published = dest;
    return Status::Ok();
  }
  std::string target = root + "/" + name;
  if (sync) RSL_RETURN_IF_ERROR(MakeDirs(root));  // else the whole-run commit made it
  // One rename in the common case (no older output, or an empty one: rename replaces it).
  int err = rename(staging.c_str(), target.c_str()) == 0 ? 0 : errno;
  if (err == ENOENT && root == RunOutputs(r)) {
    // The whole staging directory became the run's outputs (CommitStagingWhole): a step
    // that succeeded on a later attempt is there under its attempt's name.
    std::string moved = root + "/" + staging.substr(staging.rfind('/') + 1);
    if (moved != target && rename(moved.c_str(), target.c_str()) == 0) err = 0;
  }
  if (err == ENOENT) {
    // No staging: published by an earlier engine before a crash, or the backend never
    // made one (the in-process test backend): then there is nothing to publish.
    if (!PathExists(target)) {
      published->clear();
      *bytes = 0;
      return Status::Ok();
    }
  } else if (err == ENOTEMPTY || err == EEXIST) {
    // An older run's output: moved aside, replaced in one rename, then removed.
    std::string trash = root + "/.rsl-trash-" + r->run.id + "-" + name;
    RSL_RETURN_IF_ERROR(RemoveAll(trash));
    if (rename(target.c_str(), trash.c_str()) != 0) {
      return OsError(codes::kIoError, "cannot move aside", target, errno);
    }
    if (rename(staging.c_str(), target.c_str()) != 0) {
      return OsError(codes::kIoError, "cannot publish", target, errno);
    }
    RSL_RETURN_IF_ERROR(RemoveAll(trash));
  } else if (err != 0) {
    return OsError(codes::kIoError, "cannot publish", target, err)
        .Hint("staging and data.output must be on one file system for an atomic rename");
  }
  OpenToReaders(target);
  if (sync) RSL_RETURN_IF_ERROR(SyncDir(root));
  *published = target;
  *bytes = TreeBytes(target);
  return Status::Ok();
}

// The run's own output directory does not exist yet (the usual case): the staging directory
// becomes it in ONE rename, instead of one rename per step (about 20 us each on ext4, 0.2 s
// for 10,000 steps, all at the end of the run). First every entry that is not a succeeded
// step's last attempt is removed (failed attempts), then staging is renamed. A first
// attempt's staging already has its output's name (StagingDir); a step that succeeded on
// attempt n > 1 is left as <root>/<step>.<n>, which PublishStep renames to <root>/<step>.
// Repeated after a crash, each part finds its work done. Anything unusual (the outputs
// exist, another file system) is left to the per-step publication.
Status Engine::Impl::CommitStagingWhole(RunCtx* r, const std::string& root, bool* renamed) {
  std::string staging = r->run.run_dir + "/staging";
  struct stat st_staging, st_run;
  if (PathExists(root) || stat(staging.c_str(), &st_staging) != 0 ||
      stat(r->run.run_dir.c_str(), &st_run) != 0 || st_staging.st_dev != st_run.st_dev) {
    return Status::Ok();
  }
  std::set<std::string> keep;  // entries of staging that are outputs
  for (size_t i = 0; i < r->workload.pipeline.steps.size(); ++i) {
    if (r->records[i].phase != store::kSucceeded) continue;
    const std::string& name = r->workload.pipeline.steps[i].name;
    std::string last = StagingDir(r->run.run_dir, name, r->records[i].attempts);
    keep.insert(last.substr(staging.size() + 1));
  }
  std::error_code ec;
  std::vector<std::string> remove;
  for (auto it = std::filesystem::directory_iterator(staging, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    std::string entry = it->path().filename().string();
    if (!keep.count(entry)) remove.push_back(staging + "/" + entry);
  }
  if (ec) return OsError(codes::kIoError, "cannot list", staging, ec.value());
  for (const auto& path : remove) RSL_RETURN_IF_ERROR(RemoveAll(path));
  CrashPoint("mid-publish");
  if (rename(staging.c_str(), root.c_str()) != 0) {
    return OsError(codes::kIoError, "cannot publish", root, errno);
  }
  *renamed = true;
  OpenToReaders(root);
  return SyncDir(r->run.run_dir);
}

Status Engine::Impl::DiscardRun(RunCtx* r, std::vector<std::string>* kept) {
  std::string root = r->run.run_dir + "/staging";
  std::vector<std::string> names;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(root, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  bool keep_any = false;
  for (const auto& name : names) {  // <step>.<attempt>
    std::string step = name.substr(0, name.rfind('.'));
    int i = r->plan->IndexOf(step);
    if (i >= 0 && r->workload.pipeline.steps[size_t(i)].keep_on_failure) {
      kept->push_back(step + ": " + root + "/" + name);
      keep_any = true;
      continue;
    }
    RSL_RETURN_IF_ERROR(RemoveAll(root + "/" + name));
  }
  if (!keep_any) RSL_RETURN_IF_ERROR(RemoveAll(root));
  return Status::Ok();
}

void Engine::Impl::FinishRun(RunCtx* r) {
  const RunOutcome outcome = *r->plan->outcome();
  store::Batch b;
  std::string committed_uri;
  std::string phase = outcome.phase;
  std::string code = outcome.failure_code;
  std::string message = outcome.message;
  bool fallback = false;
  std::string root = OutputRoot(r, &fallback);
  if (phase == store::kSucceeded) {
    if (r->workload.pipeline.atomic) {
      if (r->run.commit_state != store::kCommitCommitting) {
        r->run.commit_state = store::kCommitCommitting;  // decided before the first rename
        store::Batch decide;
        decide.runs.push_back(r->run);
        Commit(&decide);
      }
      CrashPoint("after-commit-decided");
      bool local = root.find("://") == std::string::npos;
      Status s;
      bool fresh = false;  // root was staging a moment ago: no manifest, no leftover in it
      if (root == RunOutputs(r)) s = CommitStagingWhole(r, root, &fresh);
      if (local && s.ok() && !fresh) {
        s = MakeDirs(root);  // the manifest goes there even if no step staged anything
        (void)RemoveAll(root + "/" + kManifest);  // readers: not committed now
        // A manifest write cut short by a crash leaves its temporary file: remove it.
        std::error_code ec;
        for (auto it = std::filesystem::directory_iterator(root, ec);
             !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
          if (StartsWith(it->path().filename().string(), std::string(kManifest) + ".tmp.")) {
            (void)RemoveAll(it->path().string());
          }
        }
      }
      nlohmann::json files = nlohmann::json::array();
      for (size_t i = 0; i < r->workload.pipeline.steps.size() && s.ok(); ++i) {
        if (r->records[i].phase != store::kSucceeded) continue;
        std::string published;
        int64_t bytes = 0;
        s = PublishStep(r, static_cast<int>(i), &published, &bytes, /*sync=*/!local);
        if (!s.ok()) break;
        const std::string& name = r->workload.pipeline.steps[i].name;
        r->records[i].output_dir = published;
        b.steps.push_back(r->records[i]);
        if (!published.empty()) {
          b.artifacts.push_back({r->run.id, name, published, bytes, "output", ""});
          b.lineage.push_back({r->run.id, r->version.id, published, "output", ""});
          files.push_back({{"step", name}, {"uri", published}, {"bytes", bytes}});
        }
        CrashPoint("mid-publish");
      }
      if (s.ok() && local) s = SyncDir(root);  // every rename durable before the manifest
      if (s.ok() && local) {
        nlohmann::json manifest = {{"run_id", r->run.id}, {"workload_id", r->version.id},
                                   {"committed_at", NowMs()}, {"outputs", files}};
        s = WriteFileAtomic(root + "/" + kManifest, manifest.dump(2) + "\n");
      }
      // What is left in staging are failed attempts' outputs: never published.
      if (s.ok()) s = RemoveAll(r->run.run_dir + "/staging");
      if (s.ok()) {
        std::string msg =
            "published " + std::to_string(files.size()) + " step output(s) under " + root;
        if (fallback) {
          msg += " (data.output.uri " + r->workload.data.output->uri +
                 " has no storage here; published under the run directory instead)";
        }
        AddEvent(&b, r->run.id, "", "OutputCommitted", msg, fallback);
        r->run.commit_state = store::kCommitCommitted;
        committed_uri = root;
      } else {
        phase = store::kFailed;
        code = s.code();
        message = "output commit failed: " + s.error().message;
        AddEvent(&b, r->run.id, "", "OutputCommitFailed", message, true);
        r->run.commit_state = store::kCommitDiscarded;
      }
    } else {
      (void)RemoveAll(r->run.run_dir + "/staging");  // failed attempts' outputs only
      r->run.commit_state = store::kCommitCommitted;
      committed_uri = root;
    }
  } else {
    std::vector<std::string> kept;
    Status s = DiscardRun(r, &kept);
    std::string msg = r->workload.pipeline.atomic ? "staged outputs removed"
                                                  : "staged outputs of unfinished steps removed";
    if (!kept.empty()) msg += "; kept (keepOnFailure): " + Join(kept, ", ");
    if (!s.ok()) msg += "; " + s.error().message;
    AddEvent(&b, r->run.id, "", "OutputDiscarded", msg, false);
    r->run.commit_state = store::kCommitDiscarded;
  }
  r->run.phase = phase;
  r->run.failure_code = code;
  r->run.failure_message = message;
  r->run.finished_at = NowMs();
  r->run.committed_uri = committed_uri;
  b.runs.push_back(r->run);
  CrashPoint("before-committed-record");
  static const std::map<std::string, std::string> kReasons = {
      {store::kSucceeded, "Succeeded"}, {store::kFailed, "Failed"},
      {store::kTimedOut, "TimedOut"}, {store::kCancelled, "Cancelled"}};
  std::string ev = phase == store::kSucceeded ? "the run succeeded" : code + ": " + message;
  AddEvent(&b, r->run.id, "", kReasons.at(phase), ev, phase != store::kSucceeded);
  Commit(&b);
  for (const auto& h : hooks_.steps) h->AfterRun(r->info, phase, committed_uri);
  {
    std::lock_guard<std::mutex> lock(ev_mu_);
    finished_.insert(r->run.id);
  }
  finish_cv_.notify_all();
  runs_.erase(r->run.id);
}

}  // namespace rsl::engine
