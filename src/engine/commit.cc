// Ending a run: publishing outputs (atomic: all at the end, recorded as "committing" before
// the first rename and "committed" after the manifest; non-atomic: each step as it
// succeeds) or discarding staging (keepOnFailure steps kept and named), then the terminal
// record, the run's event and the AfterRun hooks. Every step here is idempotent, so a
// recovered engine simply does it again. Every file operation goes through the engine's Env,
// so fault tests fail each rename and fsync of a commit in turn.

#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <set>

#include "base/codes.h"
#include "base/commit_manifest.h"
#include "base/strings.h"
#include "engine/engine_internal.h"
#include "engine/object_root.h"
#include "engine/output_root.h"

namespace rsl::engine {
namespace {

// The run's own output directory (no data.output): only this engine writes there.
std::string RunOutputs(const RunState* r) { return r->run.run_dir + "/outputs"; }

// A published output directory opens to its readers: an isolated step made its staging 0700
// for itself (backend/identity.h). Not recursive: the files keep the modes the step gave
// them. Never through a link in its place (Env::OpenDirTo). Best effort: the output is
// published either way.
constexpr uint32_t kReadersBits = 0755;
void OpenToReaders(Env* env, const std::string& dir) { (void)env->OpenDirTo(dir, kReadersBits); }
// A step's output opened to readers, and its bytes (TreeBytes).
int64_t OpenToReadersAndMeasure(Env* env, const std::string& dir) {
  return env->OpenDirToAndMeasure(dir, kReadersBits);
}

// A failed publication as the run reports it: IO_ERROR whatever the rename said.
Status PublishError(Status s, const std::string& hint = "") {
  s.error().code = codes::kIoError;
  if (!hint.empty()) s.error().hint = hint;
  return s;
}

// The event of a run's end: SUCCEEDED -> Succeeded, TIMED_OUT -> TimedOut, ...
spec::EventReason RunEndReason(spec::RunPhase phase) {
  switch (phase) {
    case spec::RunPhase::kSucceeded:
      return spec::EventReason::kSucceeded;
    case spec::RunPhase::kTimedOut:
      return spec::EventReason::kTimedOut;
    case spec::RunPhase::kCancelled:
      return spec::EventReason::kCancelled;
    default:
      return spec::EventReason::kFailed;
  }
}

// The run a manifest records as the commit a new one replaces. A manifest of this very run:
// a commit repeated after a crash. One without a run (a publisher's) or that does not parse:
// no run to record; the commit replaces it as ever.
void PreviousFrom(const std::string& text, const std::string& run_id,
                  std::optional<CommitManifest>* previous) {
  auto m = ParseCommitManifest(text);
  if (!m.ok() || m->run_id.empty() || m->run_id == run_id) return;
  *previous = std::move(*m);
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

std::string Engine::Impl::OutputBase(const spec::Workload& w, bool* fallback) {
  if (fallback) *fallback = false;
  if (!w.data.output || w.data.output->uri.empty()) return "";
  const std::string& uri = w.data.output->uri;
  std::string local = LocalPathOf(uri, hooks_.publisher.get());
  if (!local.empty()) return local;
  if (hooks_.publisher && hooks_.publisher->Handles(uri)) return uri;
  if (fallback) *fallback = true;
  return "";
}

bool Engine::Impl::Versioned(RunState* r) {
  return r->workload->data.output &&
         r->workload->data.output->policy == spec::OutputPolicy::kVersioned &&
         !OutputBase(*r->workload).empty();
}

std::string Engine::Impl::OutputRoot(RunState* r, bool* fallback) {
  std::string base = OutputBase(*r->workload, fallback);
  if (base.empty()) return RunOutputs(r);
  return Versioned(r) ? base + "/" + r->run.id : base;
}

Status Engine::Impl::PublishStep(RunState* r, int i, std::string* published, int64_t* bytes,
                                 bool sync, const std::set<std::string>* whole) {
  const std::string& name = r->workload->pipeline.steps[size_t(i)].name;
  std::string staging = StagingDir(r->run.run_dir, name, r->slots[size_t(i)].record.attempts);
  bool fallback = false;
  std::string root = OutputRoot(r, &fallback);
  if (root.find("://") != std::string::npos) {
    std::string dest = root + "/" + name;
    if (!env_->PathExists(staging)) RSL_RETURN_IF_ERROR(env_->MakeDirs(staging));
    *bytes = TreeBytes(env_, staging);
    // Named before the upload: one that fails half way leaves objects there to undo.
    *published = dest;
    return hooks_.publisher->Publish(staging, dest);
  }
  std::string target = root + "/" + name;
  auto nothing = [&] {
    published->clear();
    *bytes = 0;
    return Status::Ok();
  };
  auto in_place = [&]() -> Status {
    *published = target;  // in place now, whatever fails next
    *bytes = OpenToReadersAndMeasure(env_, target);
    if (sync) RSL_RETURN_IF_ERROR(env_->SyncDir(root));
    return Status::Ok();
  };
  if (whole) {
    // What the whole-run commit moved is known: no rename to try, no path to look up.
    std::string entry = staging.substr(staging.rfind('/') + 1);
    if (!whole->count(entry)) return nothing();
    if (entry != name) {  // a later attempt's: <root>/<step>.<n> -> <root>/<step>
      Status again = env_->Rename(root + "/" + entry, target);
      if (!again.ok()) return PublishError(again);
    }
    return in_place();
  }
  if (sync) RSL_RETURN_IF_ERROR(env_->MakeDirs(root));  // else the whole-run commit made it
  // One rename in the common case (no older output, or an empty one: rename replaces it).
  Status moved = env_->Rename(staging, target);
  if (moved.code() == codes::kNotFound && root == RunOutputs(r)) {
    // The whole staging directory became the run's outputs (CommitStagingWhole): a step
    // that succeeded on a later attempt is there under its attempt's name.
    std::string whole = root + "/" + staging.substr(staging.rfind('/') + 1);
    if (whole != target) {
      Status again = env_->Rename(whole, target);
      // Anything but "not there" is a failure of its own: the output must not be dropped.
      if (again.code() != codes::kNotFound) moved = again;
    }
  }
  if (moved.code() == codes::kNotFound) {
    // No staging: published by an earlier engine before a crash, or the backend never
    // made one (the in-process test backend): then there is nothing to publish.
    if (!env_->PathExists(target)) return nothing();
  } else if (moved.code() == codes::kConflict) {
    // An older run's output: moved aside, replaced in one rename, then removed.
    std::string trash = root + "/.rsl-trash-" + r->run.id + "-" + name;
    RSL_RETURN_IF_ERROR(env_->RemoveAll(trash));
    Status aside = env_->Rename(target, trash);
    if (!aside.ok()) return PublishError(aside);
    Status replaced = env_->Rename(staging, target);
    if (!replaced.ok()) return PublishError(replaced);
    *published = target;  // in place now, whatever fails next
    RSL_RETURN_IF_ERROR(env_->RemoveAll(trash));
  } else if (!moved.ok()) {
    return PublishError(moved,
                        "staging and data.output must be on one file system for an atomic rename");
  }
  return in_place();
}

// The run's own output directory does not exist yet (the usual case): the staging directory
// becomes it in ONE rename, instead of one rename per step (about 20 us each on ext4, 0.2 s
// for 10,000 steps, all at the end of the run). First every entry that is not a succeeded
// step's last attempt is removed (failed attempts), then staging is renamed. A first
// attempt's staging already has its output's name (StagingDir); a step that succeeded on
// attempt n > 1 is left as <root>/<step>.<n>, which PublishStep renames to <root>/<step>.
// Repeated after a crash, each part finds its work done. Anything unusual (the outputs
// exist, another file system) is left to the per-step publication.
Status Engine::Impl::CommitStagingWhole(RunState* r, const std::string& root, bool* renamed,
                                        std::optional<std::set<std::string>>* whole,
                                        CommitManifest* manifest) {
  std::string staging = r->run.run_dir + "/staging";
  if (env_->PathExists(root)) return Status::Ok();
  auto st_staging = env_->Stat(staging);
  if (!st_staging.ok() && st_staging.error().code == codes::kNotFound) {
    // Neither staging nor outputs: no step staged anything (a backend that makes none),
    // and no earlier engine published any of it (its rename would have left outputs).
    whole->emplace();
    return Status::Ok();
  }
  auto st_run = env_->Stat(r->run.run_dir);
  if (!st_staging.ok() || !st_run.ok() || st_staging->device != st_run->device) {
    return Status::Ok();
  }
  std::set<std::string> keep;  // entries of staging that are outputs
  bool final_names = true;     // each under its step's name: no rename after the whole one
  for (size_t i = 0; i < r->workload->pipeline.steps.size(); ++i) {
    if (r->slots[i].record.phase != spec::StepPhase::kSucceeded) continue;
    const std::string& name = r->workload->pipeline.steps[i].name;
    std::string last = StagingDir(r->run.run_dir, name, r->slots[i].record.attempts);
    std::string entry = last.substr(staging.size() + 1);
    if (entry != name) final_names = false;
    keep.insert(std::move(entry));
  }
  auto entries = env_->ListDir(staging);
  if (!entries.ok()) return entries.status();
  std::set<std::string> kept;
  for (const auto& entry : *entries) {
    if (keep.count(entry)) {
      kept.insert(entry);
    } else {
      RSL_RETURN_IF_ERROR(env_->RemoveAll(staging + "/" + entry));
    }
  }
  if (final_names) {
    // The manifest goes in first: root appears with it (readers never see root without
    // one), and WriteFileAtomic's fsync of staging makes the step entries durable with it.
    // A crash before the rename leaves it in staging, where it is no output: the next try
    // removes it above and writes it again.
    for (size_t i = 0; i < r->workload->pipeline.steps.size(); ++i) {
      const std::string& name = r->workload->pipeline.steps[i].name;
      if (r->slots[i].record.phase != spec::StepPhase::kSucceeded || !kept.count(name)) continue;
      manifest->outputs.push_back(
          {name, root + "/" + name, OpenToReadersAndMeasure(env_, staging + "/" + name)});
    }
    manifest->committed_at = NowMs();
    RSL_RETURN_IF_ERROR(
        env_->WriteFileAtomic(staging + "/" + kCommitManifestName, CommitManifestJson(*manifest)));
  }
  CrashPoint("mid-publish");
  Status moved = env_->Rename(staging, root);
  if (!moved.ok()) return PublishError(moved);
  *renamed = true;
  *whole = std::move(kept);
  OpenToReaders(env_, root);
  return env_->SyncDir(r->run.run_dir);
}

Status Engine::Impl::DiscardRun(RunState* r, std::vector<std::string>* kept) {
  std::string root = r->run.run_dir + "/staging";
  if (!env_->PathExists(root)) return Status::Ok();
  auto names = env_->ListDir(root);
  if (!names.ok()) return names.status();
  std::sort(names->begin(), names->end());
  bool keep_any = false;
  for (const auto& name : *names) {  // <step>.<attempt>
    std::string step = name.substr(0, name.rfind('.'));
    int i = r->plan->IndexOf(step);
    if (i >= 0 && r->workload->pipeline.steps[size_t(i)].keep_on_failure) {
      kept->push_back(step + ": " + root + "/" + name);
      keep_any = true;
      continue;
    }
    RSL_RETURN_IF_ERROR(env_->RemoveAll(root + "/" + name));
  }
  if (!keep_any) RSL_RETURN_IF_ERROR(env_->RemoveAll(root));
  return Status::Ok();
}

Status Engine::Impl::UnpublishManifest(const std::string& root) {
  RSL_RETURN_IF_ERROR(env_->MakeDirs(root));  // the manifest goes there even with no output
  // Readers: not committed from now on. It must be gone before the first rename, or they
  // would take a mix of old and new outputs for the old commit.
  RSL_RETURN_IF_ERROR(env_->RemoveAll(root + "/" + kCommitManifestName));
  // A manifest write cut short by a crash leaves its temporary file: remove it.
  auto names = env_->ListDir(root);
  if (!names.ok()) return Status::Ok();
  for (const auto& name : *names) {
    if (StartsWith(name, std::string(kCommitManifestName) + ".tmp."))
      (void)env_->RemoveAll(root + "/" + name);
  }
  return Status::Ok();
}

std::string Engine::Impl::UndoCommit(RunState* r, const std::string& root, bool touched,
                                     const std::vector<std::string>& published_dirs) {
  const bool own_root = root == RunOutputs(r) || Versioned(r);
  std::vector<std::string> problems;
  auto note = [&](const Status& st) {
    if (!st.ok()) problems.push_back(st.error().message);
  };
  if (touched) {
    // First the commit point, in case the failure came after the manifest was renamed in.
    note(RemoveOutput(root + "/" + kCommitManifestName));
    if (own_root) {
      note(RemoveOutput(root));  // the run's own: everything in it came from this commit
    } else {
      for (const auto& dir : published_dirs) note(RemoveOutput(dir));
      // An older output moved aside when replacing it failed: it is not committed any more
      // (its manifest is gone), and nobody else would remove it.
      std::string trash = ".rsl-trash-" + r->run.id + "-";
      if (auto names = env_->ListDir(root); names.ok()) {
        for (const auto& name : *names) {
          if (StartsWith(name, trash)) note(env_->RemoveAll(root + "/" + name));
        }
      }
    }
  }
  std::vector<std::string> kept;
  note(DiscardRun(r, &kept));
  std::string msg = "published and staged outputs removed";
  if (!kept.empty()) msg += "; kept (keepOnFailure): " + Join(kept, ", ");
  if (!problems.empty()) msg += "; " + Join(problems, "; ");
  return msg;
}

Status Engine::Impl::ReadPreviousCommit(const std::string& root, const std::string& run_id,
                                        std::optional<CommitManifest>* previous) {
  std::string path = root + "/" + kCommitManifestName;
  if (!env_->PathExists(path)) return Status::Ok();  // none: nothing is replaced
  auto text = env_->ReadFile(path);
  if (!text.ok()) return text.status();
  PreviousFrom(*text, run_id, previous);
  return Status::Ok();
}

Status Engine::Impl::UnpublishObjectManifest(const std::string& root, const std::string& run_id,
                                             bool replace,
                                             std::optional<CommitManifest>* previous) {
  auto found = ReadObjectManifest(hooks_.publisher.get(), root);
  if (!found.ok()) return found.status();
  if (!found->has_value()) return Status::Ok();
  if (replace) PreviousFrom((*found)->bytes, run_id, previous);
  // Readers: not committed from now on (as UnpublishManifest). The new manifest is then
  // written create-only: a commit that lost its lease cannot overwrite another's.
  return hooks_.publisher->Remove(root + "/" + kCommitManifestName);
}

Status Engine::Impl::RemoveOutput(const std::string& path) {
  if (path.find("://") == std::string::npos) return env_->RemoveAll(path);
  if (!hooks_.publisher) {
    return Error(codes::kInvalidArgument, "no storage serves " + path).Value(path);
  }
  return hooks_.publisher->Remove(path);
}

Status Engine::Impl::RemoveReplacedOutputs(const std::string& root, const CommitManifest& previous,
                                           const CommitManifest& current) {
  std::set<std::string> kept;
  for (const auto& o : current.outputs) kept.insert(o.uri);
  for (const auto& o : previous.outputs) {
    // Only a step directory right under the root, as a commit publishes it: never anything
    // a manifest that was edited by hand could point elsewhere.
    if (o.step.empty() || o.step.find('/') != std::string::npos || o.step[0] == '.') continue;
    std::string dir = root + "/" + o.step;
    if (o.uri != dir || kept.count(dir)) continue;
    RSL_RETURN_IF_ERROR(RemoveOutput(dir));
  }
  return Status::Ok();
}

void Engine::Impl::RecordSuperseded(RunState* r, const std::string& base,
                                    const CommitManifest& previous, store::Batch* b,
                                    std::string* msg) {
  *msg += "; replaced the outputs of run " + previous.run_id;
  b->lineage.push_back({r->run.id, previous.run_id, base, "supersedes", ""});
  // The replaced run's own record, when this store holds it (another state directory's run
  // learns it from the manifest: `seedctl model verify`, docs/engine.md).
  if (!store_->GetRun(previous.run_id).ok()) return;
  AddEvent(b, previous.run_id, "", spec::EventReason::kOutputSuperseded,
           "the outputs under " + base + " were replaced by run " + r->run.id + " (workload " +
               r->version.id + "); this run's outputs are gone from there",
           true);
  b->lineage.push_back({previous.run_id, base, r->run.id, "superseded-by", ""});
}

bool Engine::Impl::TakeOutputRoot(RunState* r, store::Batch* b) {
  if (!r->pending_publications.empty()) {
    // Step publications (atomic: false) wait for the root's lease: the run ends after them.
    r->root_retry_at = r->publish_retry_at + 1;
    Reschedule(r);
    return false;
  }
  if (r->plan->outcome()->phase != spec::RunPhase::kSucceeded) return true;  // nothing to publish
  if (r->root_lock || r->root_lease || !r->root_error.ok()) return true;
  const std::string base = OutputBase(*r->workload);
  const bool shared_local = !base.empty() && base.find("://") == std::string::npos;
  const bool shared_object = !base.empty() && !shared_local && SharedObjectRoot(base);
  // An atomic commit holds the root to its manifest; a non-atomic versioned run only moves
  // `latest` under it.
  if (!shared_local && !shared_object) return true;
  if (!r->workload->pipeline.atomic && !Versioned(r)) return true;
  const int64_t now = NowMs();
  if (r->root_wait_since == 0) r->root_wait_since = now;
  LeaseRecord seen;  // an object-store root's holder
  if (shared_local) {
    auto lock = TryLockOutputRoot(env_, base);
    if (!lock.ok()) {
      r->root_error = lock.status();
      return true;
    }
    r->root_lock = std::move(*lock);
    if (r->root_lock) return true;
  } else {
    auto lease =
        ObjectLease::TryAcquire(hooks_.publisher.get(), env_, base, r->run.id, {}, "", &seen);
    if (!lease.ok()) {
      r->root_error = lease.status();
      return true;
    }
    r->root_lease = std::move(*lease);
    if (r->root_lease) return true;
  }
  const int64_t waited = now - r->root_wait_since;
  if (waited >= kOutputLockWaitMs) {
    r->root_error = shared_local ? OutputRootStayedLocked(base, waited)
                                 : ObjectLease::StayedLocked(base, "", seen, waited);
    return true;
  }
  if (r->root_poll_ms == 0) {
    // Once, when the wait begins: why the run has not ended yet.
    store::Batch own;
    AddEvent(b ? b : &own, r->run.id, "", spec::EventReason::kOutputCommitWaiting,
             "waiting for output root " + base + ": another run" +
                 (seen.run_id.empty() ? "" : " (" + seen.run_id + ")") + " is committing there",
             false);
    (void)Commit(&own);
  }
  r->root_retry_at = now + NextRootPollMs(&r->root_poll_ms, waited, kOutputLockWaitMs);
  Reschedule(r);
  return false;
}

void Engine::Impl::DecideFinishes(Actions* a, store::Batch* b) {
  std::vector<std::string> later;  // non-atomic: after this turn's publications
  for (const auto& id : a->finished_runs) {
    auto it = runs_.find(id);
    if (it == runs_.end() || it->second->committing) continue;
    RunState* r = it->second.get();
    if (!r->workload->pipeline.atomic) {
      later.push_back(id);
      continue;
    }
    if (!TakeOutputRoot(r, b)) continue;  // it waits for its root on a timer
    if (r->plan->outcome()->phase == spec::RunPhase::kSucceeded &&
        r->run.commit_state != store::kCommitCommitting) {
      r->run.commit_state = store::kCommitCommitting;
      b->runs.push_back(r->run);  // after any row of it the turn has: the last one counts
    }
    a->decided_runs.push_back(r);
  }
  a->finished_runs = std::move(later);
}

void Engine::Impl::FinishRuns(std::vector<RunState*> decided,
                              const std::vector<RunState*>& non_atomic) {
  std::vector<RunState*> runs = std::move(decided);
  // Their decision to commit is durable with the turn (DecideFinishes).
  bool commits = std::any_of(runs.begin(), runs.end(), [](const RunState* r) {
    return r->run.commit_state == store::kCommitCommitting;
  });
  // A run whose output root another commit holds waits for it on a timer, not here: the
  // loop goes on with every other run meanwhile.
  for (RunState* r : non_atomic) {
    if (TakeOutputRoot(r)) runs.push_back(r);
  }
  if (runs.empty()) return;
  if (commits) CrashPoint("after-commit-decided");
  for (RunState* r : runs) {
    r->committing = true;
    Unschedule(r);
  }
  {
    std::lock_guard<std::mutex> lock(commit_mu_);
    commit_queue_.push_back(std::move(runs));
  }
  commit_cv_.notify_one();
}

void Engine::Impl::CommitterLoop() {
  // Below the threads that answer users (submissions, reads) and the loop: a run's end can
  // wait a few milliseconds, a submission's answer should not.
  (void)setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10);
  while (true) {
    std::vector<RunState*> runs;
    {
      std::unique_lock<std::mutex> lock(commit_mu_);
      commit_cv_.wait(lock, [this] { return commit_stop_ || !commit_queue_.empty(); });
      if (commit_queue_.empty()) return;  // stopping, and nothing left to commit
      runs = std::move(commit_queue_.front());
      commit_queue_.pop_front();
    }
    RunFilesDoneMsg done;
    for (RunState* r : runs) {
      FinishRunFiles(r, &done.batch);
      done.run_ids.push_back(r->run.id);
    }
    Post(std::move(done));
  }
}

void Engine::Impl::EndRuns(const std::vector<std::string>& run_ids) {
  std::vector<std::array<std::string, 3>> ended;  // namespace, name, run id
  for (const auto& id : run_ids) {
    auto it = runs_.find(id);
    if (it == runs_.end()) continue;
    RunState* r = it->second.get();
    const std::string base = OutputBase(*r->workload);
    if (!base.empty() && base.find("://") == std::string::npos)
      ReleaseOutputClaim(env_, base, r->run.id);
    ReleaseObjectClaim(r->run.id);
    for (const auto& h : hooks_.steps)
      h->AfterRun(r->info, spec::Name(r->run.phase), r->run.committed_uri);
    ended.push_back({r->workload->namespace_, r->workload->name, id});
    Unschedule(r);
    runs_.erase(it);  // r is gone: a finished run is read from the store from now on
    std::lock_guard<std::mutex> lock(ev_mu_);
    RememberFinished(id);
    stats_.running_runs = static_cast<int64_t>(runs_.size());
  }
  if (ended.empty()) return;
  finish_cv_.notify_all();
  for (const auto& [ns, name, id] : ended) backend_->RunFinished(ns, name, id);  // durably ended
}

void Engine::Impl::FinishRunFiles(RunState* r, store::Batch* batch) {
  const RunOutcome outcome = *r->plan->outcome();
  store::Batch& b = *batch;  // shared by the runs the committer ends together
  // This run's rows begin here: a failed commit takes back its own, not the other runs'.
  const size_t artifacts_before = b.artifacts.size(), lineage_before = b.lineage.size();
  std::string committed_uri;
  spec::RunPhase phase = outcome.phase;
  std::string code = outcome.failure_code;
  std::string message = outcome.message;
  bool fallback = false;
  std::string root = OutputRoot(r, &fallback);
  // A data.output root other runs may commit to too (not the run's own outputs/).
  const std::string base = OutputBase(*r->workload);
  const bool shared_local = !base.empty() && base.find("://") == std::string::npos;
  // An object-store root with conditional writes (s3://, ceph://): commits take turns
  // through a lease object instead of the lock (engine/object_root.h).
  const bool shared_object = !base.empty() && !shared_local && hooks_.publisher &&
                             hooks_.publisher->ConditionalWrites(base);
  if (phase == spec::RunPhase::kSucceeded) {
    if (r->workload->pipeline.atomic) {
      bool local = root.find("://") == std::string::npos;
      Status s;
      // Commits to one shared root take turns (its lock, held to the manifest): a root never
      // holds steps of two runs under one manifest.
      std::unique_ptr<FileLock> root_lock;
      std::unique_ptr<ObjectLease> lease;
      // Taken by TakeOutputRoot, or the error its wait ended with.
      root_lock = std::move(r->root_lock);
      lease = std::move(r->root_lease);
      s = r->root_error;
      if (s.ok() && shared_local && !root_lock) {
        auto lock = LockOutputRoot(env_, base);
        if (lock.ok()) {
          root_lock = std::move(*lock);
        } else {
          s = lock.status();
        }
      } else if (s.ok() && shared_object && !lease) {
        auto taken = ObjectLease::Acquire(hooks_.publisher.get(), env_, base, r->run.id);
        if (taken.ok()) {
          lease = std::move(*taken);
        } else {
          s = taken.status();
        }
      }
      // The commit this one replaces (policy replace): its run is recorded as superseded,
      // and its outputs that this run does not write again are removed with it.
      std::optional<CommitManifest> previous;
      if (s.ok() && shared_local && !Versioned(r))
        s = ReadPreviousCommit(root, r->run.id, &previous);
      bool fresh = false;  // root was staging a moment ago: no manifest, no leftover in it
      // What the run's staging put under root, when known: its steps need not look.
      std::optional<std::set<std::string>> whole;
      CommitManifest manifest;  // written last: readers' commit point
      manifest.run_id = r->run.id;
      manifest.workload_id = r->version.id;
      if (s.ok() && root == RunOutputs(r))
        s = CommitStagingWhole(r, root, &fresh, &whole, &manifest);
      // Written into staging before the whole rename: its outputs are in place and listed.
      const bool manifest_first = manifest.committed_at != 0;
      if (local && s.ok() && !fresh) s = UnpublishManifest(root);
      if (lease && s.ok()) s = UnpublishObjectManifest(root, r->run.id, !Versioned(r), &previous);
      // From here on this commit may have changed what is under root (the run's own outputs
      // are this run's alone: always).
      bool touched = s.ok() || root == RunOutputs(r);
      std::vector<std::string> published_dirs;  // under root now: undone if the commit fails
      size_t listed = 0;  // manifest_first: the next of manifest.outputs (pipeline order)
      for (size_t i = 0; i < r->workload->pipeline.steps.size() && s.ok(); ++i) {
        if (r->slots[i].record.phase != spec::StepPhase::kSucceeded) continue;
        std::string published;
        int64_t bytes = 0;
        if (manifest_first) {  // in place under its name already, and listed
          const auto& outs = manifest.outputs;
          if (listed < outs.size() && outs[listed].step == r->workload->pipeline.steps[i].name) {
            published = outs[listed].uri;
            bytes = outs[listed].bytes;
            ++listed;
          }
        } else {
          if (lease) {
            s = lease->Renew();  // a lease taken over stops the uploads here
            if (!s.ok()) break;
          }
          s = PublishStep(r, static_cast<int>(i), &published, &bytes, /*sync=*/!local,
                          whole ? &*whole : nullptr);
          if (!s.ok()) {
            if (!published.empty()) published_dirs.push_back(published);  // moved, then failed
            break;
          }
        }
        const std::string& name = r->workload->pipeline.steps[i].name;
        // Where it went is the artifact's row; the step's row is not written again.
        if (!published.empty()) {
          published_dirs.push_back(published);
          b.artifacts.push_back({r->run.id, name, published, bytes, "output", ""});
          b.lineage.push_back({r->run.id, r->version.id, published, "output", ""});
          if (!manifest_first) manifest.outputs.push_back({name, published, bytes});
        }
        CrashPoint("mid-publish");
      }
      if (s.ok() && previous) s = RemoveReplacedOutputs(root, *previous, manifest);
      // Every rename durable before the manifest (written already when manifest_first).
      if (s.ok() && local && !manifest_first) s = env_->SyncDir(root);
      if (s.ok() && local && !manifest_first) {
        manifest.committed_at = NowMs();
        s = env_->WriteFileAtomic(root + "/" + kCommitManifestName, CommitManifestJson(manifest));
      }
      if (s.ok() && lease) {
        s = lease->Renew(/*force=*/true);  // still ours right before the commit point
        manifest.committed_at = NowMs();
        if (s.ok()) {
          s = WriteObjectManifest(hooks_.publisher.get(), root, r->run.id,
                                  CommitManifestJson(manifest));
        }
      }
      // Another run holds the root now (a lease that expired under this commit): what is
      // published there may be that run's, so nothing of it is undone.
      const bool lost_root = lease && s.code() == codes::kOutputConflict;
      if (s.ok()) {
        // Committed: the manifest is durable. What is left in staging are failed attempts'
        // outputs, never published; failing to remove them does not undo the commit.
        std::string msg = "published " + std::to_string(manifest.outputs.size()) +
                          " step output(s) under " + root;
        if (fallback) {
          msg += " (data.output.uri " + r->workload->data.output->uri +
                 " has no storage here; published under the run directory instead)";
        }
        bool warn = fallback;
        if (lease && !lease->took_over_from().empty()) {
          msg += "; took over the expired lease of run " + lease->took_over_from();
        }
        if (previous) RecordSuperseded(r, base, *previous, &b, &msg);
        if (Versioned(r) && lease) {
          Status moved = MoveObjectLatest(hooks_.publisher.get(), base, r->run.id);
          msg += moved.ok() ? "; " + ObjectLatestUri(base) + " -> " + r->run.id
                            : "; latest not moved: " + moved.error().message;
          warn = warn || !moved.ok();
        } else if (Versioned(r)) {
          // After the commit point: a failure leaves `latest` at the previous complete run.
          Status moved = MoveLatest(env_, base, r->run.id);
          msg += moved.ok() ? "; " + base + "/latest -> " + r->run.id
                            : "; latest not moved: " + moved.error().message;
          warn = warn || !moved.ok();
        }
        root_lock.reset();
        if (lease) lease->Release();
        Status cleaned = env_->RemoveAll(r->run.run_dir + "/staging");
        if (!cleaned.ok()) msg += "; staging left: " + cleaned.error().message;
        AddEvent(&b, r->run.id, "", spec::EventReason::kOutputCommitted, msg,
                 warn || !cleaned.ok());
        r->run.commit_state = store::kCommitCommitted;
        committed_uri = root;
      } else {
        phase = spec::RunPhase::kFailed;
        // A file-system failure whatever the call said (a rename's "not found" included);
        // a publisher's own code (an unreachable object store) as it is.
        code = s.code() == codes::kNotFound || s.code() == codes::kConflict ? codes::kIoError
                                                                            : s.code();
        message = "output commit failed: " + s.error().message;
        AddEvent(&b, r->run.id, "", spec::EventReason::kOutputCommitFailed, message, true);
        // Nothing of the run stays published: the outputs recorded above are not.
        b.artifacts.resize(artifacts_before);
        b.lineage.resize(lineage_before);
        const bool undo_root = (local || (lease && !lost_root)) && touched;
        std::string undone = UndoCommit(r, root, undo_root, published_dirs);
        if (lost_root)
          undone += "; the outputs under " + root + " are left to the run that holds it";
        if (lease) lease->Release();  // after the undo: nobody commits there meanwhile
        AddEvent(&b, r->run.id, "", spec::EventReason::kOutputDiscarded, undone, false);
        r->run.commit_state = store::kCommitDiscarded;
      }
    } else {
      (void)env_->RemoveAll(r->run.run_dir + "/staging");  // failed attempts' outputs only
      r->run.commit_state = store::kCommitCommitted;
      committed_uri = root;
      if (Versioned(r) && (shared_local || shared_object)) {
        // `latest` moves under the root's lock, or on an object store under its lease, as an
        // atomic commit moves it.
        Status moved;
        std::string latest;
        // Under the lock or lease TakeOutputRoot took (or the error its wait ended with).
        std::unique_ptr<FileLock> lock = std::move(r->root_lock);
        std::unique_ptr<ObjectLease> lease = std::move(r->root_lease);
        moved = r->root_error;
        if (shared_local) {
          if (moved.ok() && !lock) {
            auto taken = LockOutputRoot(env_, base);
            if (taken.ok()) lock = std::move(*taken);
            moved = taken.status();
          }
          if (moved.ok()) moved = MoveLatest(env_, base, r->run.id);
          latest = base + "/latest";
        } else {
          if (moved.ok() && !lease) {
            auto taken = ObjectLease::Acquire(hooks_.publisher.get(), env_, base, r->run.id);
            if (taken.ok()) lease = std::move(*taken);
            moved = taken.status();
          }
          if (moved.ok()) moved = MoveObjectLatest(hooks_.publisher.get(), base, r->run.id);
          if (lease) lease->Release();
          latest = ObjectLatestUri(base);
        }
        AddEvent(&b, r->run.id, "", spec::EventReason::kOutputCommitted,
                 moved.ok()
                     ? "published under " + root + "; " + latest + " -> " + r->run.id
                     : "published under " + root + "; latest not moved: " + moved.error().message,
                 !moved.ok());
      }
    }
  } else {
    std::vector<std::string> kept;
    Status s = DiscardRun(r, &kept);
    std::string msg = r->workload->pipeline.atomic ? "staged outputs removed"
                                                   : "staged outputs of unfinished steps removed";
    if (!kept.empty()) msg += "; kept (keepOnFailure): " + Join(kept, ", ");
    if (!s.ok()) msg += "; " + s.error().message;
    AddEvent(&b, r->run.id, "", spec::EventReason::kOutputDiscarded, msg, false);
    r->run.commit_state = store::kCommitDiscarded;
  }
  r->run.phase = phase;
  r->run.failure_code = code;
  r->run.failure_message = message;
  r->run.finished_at = NowMs();
  r->run.committed_uri = committed_uri;
  b.runs.push_back(r->run);
  CrashPoint("before-committed-record");
  bool succeeded = phase == spec::RunPhase::kSucceeded;
  std::string ev = succeeded ? "the run succeeded" : code + ": " + message;
  AddEvent(&b, r->run.id, "", RunEndReason(phase), ev, !succeeded);
}

}  // namespace rsl::engine
