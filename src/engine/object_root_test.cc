// Two runs, one object-store output root (docs/engine.md "Two runs, one output root"): the
// lease and the manifest on a fake object store with S3's conditional writes, then the
// commit through the engine. The same protocol against a real radosgw:
// tests/data/s3_commit_test.cc (label s3).
#include "engine/object_root.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "base/codes.h"
#include "base/commit_manifest.h"
#include "base/fake_env.h"
#include "base/file.h"
#include "base/strings.h"
#include "engine/engine.h"
#include "engine/testing.h"
#include "spec/parse.h"

namespace rsl::engine {
namespace {

using testing::FakeBackend;

// An object store in memory with S3's semantics for what the commit uses: ETags that change
// with every write, create-only and If-Match writes, prefix removal. `fail_writes_to` makes
// every conditional write of that URI fail (an unreachable store). Thread-safe.
class FakeObjectStore : public OutputPublisher {
 public:
  bool Handles(const std::string& uri) override { return uri.rfind("s3://", 0) == 0; }
  bool ConditionalWrites(const std::string& uri) override { return Handles(uri); }

  Status Publish(const std::string& local_dir, const std::string& dest_uri) override {
    if (on_publish) on_publish(dest_uri);
    for (const auto& entry : std::filesystem::recursive_directory_iterator(local_dir)) {
      if (!entry.is_regular_file()) continue;
      std::string rel = entry.path().string().substr(local_dir.size() + 1);
      auto bytes = ReadFile(entry.path().string());
      if (!bytes.ok()) return bytes.status();
      Put(dest_uri + "/" + rel, *bytes);
    }
    Put(dest_uri + "/" + kCommitManifestName, "{}");
    return Status::Ok();
  }

  Result<StoredObject> ReadObject(const std::string& uri) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = objects_.find(uri);
    if (it == objects_.end()) return Error(codes::kNotFound, "no such object").Value(uri);
    return it->second;
  }

  Result<std::string> WriteObjectIf(const std::string& uri, const std::string& bytes,
                                    const std::string& if_match) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (uri == fail_writes_to) {
      return Error(codes::kDataSourceUnreachable, "HTTP 503 for " + uri).Value(uri);
    }
    auto it = objects_.find(uri);
    bool holds = if_match.empty() ? it == objects_.end()
                                  : it != objects_.end() && it->second.etag == if_match;
    if (!holds) return Error(codes::kConflict, "HTTP 412 for " + uri).Value(uri);
    return PutLocked(uri, bytes);
  }

  Result<std::vector<std::string>> ListObjects(const std::string& uri) override {
    if (on_list) {
      auto hook = std::move(on_list);  // once: it may call back into the store
      on_list = nullptr;
      hook();
    }
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> out;
    for (const auto& [name, o] : objects_) {
      if (name.rfind(uri + "/", 0) == 0) out.push_back(name);
    }
    return out;
  }

  Status Remove(const std::string& uri) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = objects_.begin(); it != objects_.end();) {
      bool below = it->first == uri || it->first.rfind(uri + "/", 0) == 0;
      it = below ? objects_.erase(it) : std::next(it);
    }
    return Status::Ok();
  }

  std::string Put(const std::string& uri, const std::string& bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    return PutLocked(uri, bytes);
  }
  std::map<std::string, std::string> Below(const std::string& prefix) {
    std::lock_guard<std::mutex> lock(mu_);
    std::map<std::string, std::string> out;
    for (const auto& [uri, o] : objects_) {
      if (uri.rfind(prefix + "/", 0) == 0) out[uri.substr(prefix.size() + 1)] = o.bytes;
    }
    return out;
  }

  std::string fail_writes_to;
  std::function<void(const std::string&)> on_publish;  //!< called before each Publish
  std::function<void()> on_list;  //!< called (once) at the next ListObjects, before it lists

 private:
  std::string PutLocked(const std::string& uri, const std::string& bytes) {
    std::string etag = "\"" + std::to_string(++version_) + "\"";
    objects_[uri] = {bytes, etag};
    return etag;
  }
  std::mutex mu_;
  std::map<std::string, StoredObject> objects_;
  int version_ = 0;
};

const char kBase[] = "s3://bucket/models/fraud";

TEST(ObjectLeaseTest, ASecondCommitWaitsForALiveLeaseAndFailsNamingItsHolder) {
  FakeObjectStore store;
  FakeEnv env;
  auto first = ObjectLease::Acquire(&store, &env, kBase, "run-a");
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  auto held = ParseLease(store.ReadObject(ObjectLeaseUri(kBase))->bytes);
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(held->run_id, "run-a");
  EXPECT_EQ(held->expires_at_ms, env.NowMs() + kObjectLeaseTtlMs);
  const int64_t start = env.NowMs();
  // The second polls (fake time passes in its sleeps) until its wait ends: the first is
  // alive (its lease never expires within 30 s of a 5 minute lease).
  auto second = ObjectLease::Acquire(&store, &env, kBase, "run-b", {30'000, kObjectLeaseTtlMs});
  ASSERT_FALSE(second.ok());
  EXPECT_GE(env.NowMs() - start, 30'000);
  EXPECT_EQ(second.error().code, codes::kIoError);
  EXPECT_EQ(second.error().message,
            "output root s3://bucket/models/fraud stayed locked by run run-a (" + held->holder +
                ") for 30 s");
  EXPECT_EQ(second.error().value, ObjectLeaseUri(kBase));
  // Released: the next one takes it at once.
  (*first)->Release();
  EXPECT_EQ(store.ReadObject(ObjectLeaseUri(kBase)).status().code(), codes::kNotFound);
  auto third = ObjectLease::Acquire(&store, &env, kBase, "run-c", {0, kObjectLeaseTtlMs});
  ASSERT_TRUE(third.ok()) << third.error().ToString();
  EXPECT_TRUE((*third)->took_over_from().empty());
}

TEST(ObjectLeaseTest, AnExpiredLeaseIsTakenOverAndItsHolderLosesIt) {
  FakeObjectStore store;
  FakeEnv env;
  auto dead = ObjectLease::Acquire(&store, &env, kBase, "run-dead", {0, 60'000});
  ASSERT_TRUE(dead.ok());
  env.Advance(60'001);  // its controller was killed: no renewal
  auto next = ObjectLease::Acquire(&store, &env, kBase, "run-next", {0, 60'000});
  ASSERT_TRUE(next.ok()) << next.error().ToString();
  EXPECT_EQ((*next)->took_over_from(), "run-dead");
  EXPECT_EQ(ParseLease(store.ReadObject(ObjectLeaseUri(kBase))->bytes)->run_id, "run-next");
  // The old holder notices at its next renewal, and its release leaves the new lease alone.
  Status renewed = (*dead)->Renew(/*force=*/true);
  ASSERT_FALSE(renewed.ok());
  EXPECT_EQ(renewed.code(), codes::kOutputConflict);
  EXPECT_NE(renewed.error().message.find("held by run run-next"), std::string::npos)
      << renewed.error().message;
  (*dead)->Release();
  EXPECT_EQ(ParseLease(store.ReadObject(ObjectLeaseUri(kBase))->bytes)->run_id, "run-next");
  // A live holder's renewal moves its expiry.
  env.Advance(20'000);
  ASSERT_TRUE((*next)->Renew().ok());
  EXPECT_EQ(ParseLease(store.ReadObject(ObjectLeaseUri(kBase))->bytes)->expires_at_ms,
            env.NowMs() + 60'000);
  // A lease object that is not one (written by hand) counts as expired.
  (*next)->Release();
  store.Put(ObjectLeaseUri(kBase), "garbage");
  auto over = ObjectLease::Acquire(&store, &env, kBase, "run-x", {0, 60'000});
  ASSERT_TRUE(over.ok());
  EXPECT_EQ((*over)->took_over_from(), "(unreadable lease)");
}

TEST(ObjectLeaseTest, ARecoveredEngineTakesOverItsOwnRunsLeaseAtOnce) {
  FakeObjectStore store;
  FakeEnv env;
  // The run's engine crashed mid-commit: its live lease is left behind.
  auto crashed = ObjectLease::Acquire(&store, &env, kBase, "run-a");
  ASSERT_TRUE(crashed.ok());
  const int64_t start = env.NowMs();
  auto recovered = ObjectLease::Acquire(&store, &env, kBase, "run-a", {0, kObjectLeaseTtlMs});
  ASSERT_TRUE(recovered.ok()) << recovered.error().ToString();
  EXPECT_EQ(env.NowMs(), start);  // no wait
  EXPECT_TRUE((*recovered)->took_over_from().empty());
  // Another run still waits for it.
  EXPECT_FALSE(ObjectLease::Acquire(&store, &env, kBase, "run-b", {0, kObjectLeaseTtlMs}).ok());
}

TEST(ObjectLeaseTest, TheManifestIsCreateOnlyAndNamesTheRunThatWroteItFirst) {
  FakeObjectStore store;
  CommitManifest a;
  a.run_id = "run-a";
  ASSERT_TRUE(WriteObjectManifest(&store, kBase, "run-a", CommitManifestJson(a)).ok());
  // Repeated (an answer lost): the same bytes are there, so it is ours.
  ASSERT_TRUE(WriteObjectManifest(&store, kBase, "run-a", CommitManifestJson(a)).ok());
  CommitManifest b;
  b.run_id = "run-b";
  Status lost = WriteObjectManifest(&store, kBase, "run-b", CommitManifestJson(b));
  ASSERT_FALSE(lost.ok());
  EXPECT_EQ(lost.code(), codes::kOutputConflict);
  EXPECT_EQ(lost.error().message,
            "the manifest s3://bucket/models/fraud/_RSL_COMMIT was written "
            "by run run-a while run run-b committed");
  auto read = ReadObjectManifest(&store, kBase);
  ASSERT_TRUE(read.ok());
  ASSERT_TRUE(read->has_value());
  EXPECT_EQ(ParseCommitManifest((*read)->bytes)->run_id, "run-a");
  EXPECT_FALSE(ReadObjectManifest(&store, "s3://bucket/none")->has_value());
}

TEST(ObjectLeaseTest, TwoThreadsTakeTurns) {
  FakeObjectStore store;
  Env* env = Env::Default();  // real time: the second waits for the first's release
  auto first = ObjectLease::Acquire(&store, env, kBase, "run-a");
  ASSERT_TRUE(first.ok());
  std::atomic<bool> acquired{false};
  std::thread second([&] {
    auto lease = ObjectLease::Acquire(&store, env, kBase, "run-b");
    EXPECT_TRUE(lease.ok());
    acquired = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(acquired.load());  // waiting: the lease is live
  (*first)->Release();
  second.join();
  EXPECT_TRUE(acquired.load());
}

spec::Workload Steps(const std::string& uri, const std::string& policy,
                     const std::vector<std::string>& steps) {
  std::string yaml =
      "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata:\n  name: shared\n"
      "  namespace: risk\nspec:\n  data:\n    output:\n      uri: " +
      uri + "\n      policy: " + policy + "\n  pipeline:\n";
  for (const auto& s : steps) yaml += "    - {name: " + s + ", command: [" + s + "]}\n";
  auto r = spec::ParseWorkload(yaml, "test.yaml");
  EXPECT_TRUE(r.ok()) << (r.errors.empty() ? "" : r.errors[0].ToString());
  return r.workload;
}

struct Fixture {
  //! `shared`: the object store of another fixture (two controllers, one store).
  explicit Fixture(const std::string& name, std::shared_ptr<FakeObjectStore> shared = nullptr)
      : dir(::testing::TempDir() + "object_root_test_" + name + "_" + std::to_string(getpid())),
        objects(shared ? shared : std::make_shared<FakeObjectStore>()) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    auto s = store::OpenSqliteStore(dir + "/state");
    EXPECT_TRUE(s.ok());
    store = std::move(*s);
    StartEngine();
  }
  void StartEngine() {
    EngineOptions opts;
    opts.state_dir = dir + "/state";
    opts.env = &env;
    Hooks hooks;
    hooks.publisher = objects;
    engine = std::make_unique<Engine>(store.get(), &backend, hooks, opts);
    EXPECT_TRUE(engine->Start().ok());
  }
  //! The engine stops (its runs stay in flight, as when its process is killed) and a new
  //! one recovers them.
  void Restart() {
    engine->Stop(false);
    engine.reset();
    StartEngine();
    EXPECT_TRUE(engine->Recover().ok());
  }
  // Submits `w` and ends its steps successfully, each writing its run id; returns the run.
  store::Run RunToEnd(const spec::Workload& w) {
    auto id = engine->Submit(w, "alice");
    EXPECT_TRUE(id.ok());
    for (size_t i = 0; i < w.pipeline.steps.size(); ++i) {
      auto l = backend.WaitLaunch(++launched);
      EXPECT_TRUE(WriteFileAtomic(l.env.at("RSL_OUTPUT") + "/who", l.env.at("RSL_RUN_ID")).ok());
      backend.Succeed(l.attempt_id);
    }
    auto run = engine->Wait(*id, 60'000);
    EXPECT_TRUE(run.ok());
    WaitClaimGone(run->id);
    return *run;
  }
  // Wait may return once the run's end is durable, a moment before its loop turn removes
  // its claim, then its marker: wait for both (one that stays fails the test after a minute).
  void WaitClaimGone(const std::string& run_id) {
    for (int i = 0; i < 60'000; ++i) {
      if (objects->ReadObject(ObjectClaimUri(kBase, run_id)).status().code() == codes::kNotFound &&
          !std::filesystem::exists(dir + "/state/object-claims/" + run_id))
        return;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ADD_FAILURE() << "the claim of " << run_id << " stayed";
  }
  std::vector<store::Event> Events(const std::string& run_id, const std::string& reason) {
    std::vector<store::Event> out;
    auto events = store->ListEvents(run_id, 0);
    for (const auto& e : *events) {
      if (e.reason == reason) out.push_back(e);
    }
    return out;
  }
  // Whether run `run_id` records a `reason` event within 10 s of real time.
  bool WaitForEvent(const std::string& run_id, const std::string& reason) {
    for (int i = 0; i < 10'000; ++i) {
      if (!Events(run_id, reason).empty()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
  }
  std::string ManifestRun(const std::string& root) {
    auto m = objects->ReadObject(root + "/" + kCommitManifestName);
    if (!m.ok()) return "";
    auto parsed = ParseCommitManifest(m->bytes);
    return parsed.ok() ? parsed->run_id : "";
  }
  std::string dir;
  FakeClockEnv env;
  FakeBackend backend;
  std::shared_ptr<FakeObjectStore> objects;
  std::unique_ptr<store::Store> store;
  std::unique_ptr<Engine> engine;
  size_t launched = 0;
};

TEST(ObjectRootCommitTest, ReplaceLeavesOneRunsSetAndRecordsTheOtherAsSuperseded) {
  Fixture f("replace");
  auto first = f.RunToEnd(Steps(kBase, "replace", {"a", "b"}));
  ASSERT_EQ(first.phase, spec::RunPhase::kSucceeded) << first.failure_message;
  EXPECT_EQ(f.ManifestRun(kBase), first.id);
  auto second = f.RunToEnd(Steps(kBase, "replace", {"a"}));
  ASSERT_EQ(second.phase, spec::RunPhase::kSucceeded) << second.failure_message;
  EXPECT_EQ(f.ManifestRun(kBase), second.id);
  // Exactly the second run's objects: its `a`, the first's `b` removed, no lease left.
  auto objects = f.objects->Below(kBase);
  std::vector<std::string> names;
  for (const auto& [name, bytes] : objects) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"_RSL_COMMIT", "a/_RSL_COMMIT", "a/who"}));
  EXPECT_EQ(objects["a/who"], second.id);
  auto superseded = f.Events(first.id, "OutputSuperseded");
  ASSERT_EQ(superseded.size(), 1u);
  EXPECT_EQ(superseded[0].message,
            "the outputs under " + std::string(kBase) + " were replaced by run " + second.id +
                " (workload " + second.workload_id + "); this run's outputs are gone from there");
  auto committed = f.Events(second.id, "OutputCommitted");
  ASSERT_EQ(committed.size(), 1u);
  EXPECT_NE(committed[0].message.find("replaced the outputs of run " + first.id), std::string::npos)
      << committed[0].message;
}

TEST(ObjectRootCommitTest, ACommitTakesOverALeaseLeftByAKilledController) {
  Fixture f("stale");
  LeaseRecord stale{"run-killed", "elsewhere:1", "t", f.env.NowMs() - 1};
  f.objects->Put(ObjectLeaseUri(kBase), LeaseJson(stale));
  auto run = f.RunToEnd(Steps(kBase, "replace", {"a"}));
  ASSERT_EQ(run.phase, spec::RunPhase::kSucceeded) << run.failure_message;
  auto committed = f.Events(run.id, "OutputCommitted");
  ASSERT_EQ(committed.size(), 1u);
  EXPECT_NE(committed[0].message.find("took over the expired lease of run run-killed"),
            std::string::npos)
      << committed[0].message;
  EXPECT_EQ(f.objects->ReadObject(ObjectLeaseUri(kBase)).status().code(), codes::kNotFound);
}

// A commit whose root another controller's live lease holds waits on a timer, not in the
// engine's loop: the engine's other runs go on meanwhile, and once the lease is gone the
// waiting run commits.
TEST(ObjectRootCommitTest, ACommitWaitingForTheLeaseHoldsUpNoOtherRun) {
  Fixture f("waiting");
  auto id = f.engine->Submit(Steps(kBase, "replace", {"a"}), "alice");
  ASSERT_TRUE(id.ok());
  const std::string waiting = store::RunIdFor(*id);
  auto l = f.backend.WaitLaunch(++f.launched);
  ASSERT_TRUE(WriteFileAtomic(l.env.at("RSL_OUTPUT") + "/who", waiting).ok());
  // Another controller's commit takes the root meanwhile (a lease far from expiring).
  LeaseRecord live{"run-other", "elsewhere:7", "t", f.env.NowMs() + 3'600'000};
  f.objects->Put(ObjectLeaseUri(kBase), LeaseJson(live));
  f.backend.Succeed(l.attempt_id);
  ASSERT_TRUE(f.WaitForEvent(waiting, "OutputCommitWaiting"));
  EXPECT_EQ(f.Events(waiting, "OutputCommitWaiting")[0].message,
            "waiting for output root " + std::string(kBase) +
                ": another run (run-other) is committing there");
  auto other = f.RunToEnd(Steps(std::string(kBase) + "-elsewhere", "replace", {"b"}));
  EXPECT_EQ(other.phase, spec::RunPhase::kSucceeded) << other.failure_message;
  f.env.Advance(30'000);  // retried, still held
  EXPECT_EQ(f.store->GetRun(waiting)->phase, spec::RunPhase::kRunning);
  ASSERT_TRUE(f.objects->Remove(ObjectLeaseUri(kBase)).ok());  // that commit ended
  f.env.Advance(2'000);
  auto run = f.engine->Wait(*id, 60'000);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->phase, spec::RunPhase::kSucceeded) << run->failure_message;
  EXPECT_EQ(f.ManifestRun(kBase), waiting);
  EXPECT_EQ(f.Events(waiting, "OutputCommitWaiting").size(), 1u);
}

// An output commit runs on a committer thread, not the engine's loop: while one run uploads
// its outputs (a big model to an object store can take minutes), other runs are launched,
// run, and commit theirs. On the loop, every launch of every run waited for the upload.
TEST(ObjectRootCommitTest, AnUploadInProgressHoldsUpNoOtherRun) {
  Fixture f("uploading");
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  struct Release {  // whatever fails below, the upload ends before the engine stops
    std::promise<void>* p;
    bool done = false;
    void operator()() {
      if (!done) p->set_value();
      done = true;
    }
    ~Release() { (*this)(); }
  } let_go{&release};
  std::promise<void> entered;
  std::future<void> uploading = entered.get_future();
  std::atomic<bool> held{false};
  f.objects->on_publish = [&](const std::string& dest) {
    if (dest.rfind(std::string(kBase) + "/", 0) != 0 || held.exchange(true)) return;
    entered.set_value();
    released.wait();
  };
  auto id = f.engine->Submit(Steps(kBase, "replace", {"a"}), "alice");
  ASSERT_TRUE(id.ok());
  const std::string first = store::RunIdFor(*id);
  auto l = f.backend.WaitLaunch(++f.launched);
  ASSERT_TRUE(WriteFileAtomic(l.env.at("RSL_OUTPUT") + "/who", first).ok());
  f.backend.Succeed(l.attempt_id);
  ASSERT_EQ(uploading.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  // Another run, to another root, from submission to its commit.
  const std::string elsewhere = "s3://bucket/other";
  auto other = f.engine->Submit(Steps(elsewhere, "replace", {"b", "c"}), "alice");
  ASSERT_TRUE(other.ok());
  for (int i = 0; i < 2; ++i) {
    auto launch = f.backend.WaitLaunch(++f.launched, 20'000);
    ASSERT_FALSE(launch.attempt_id.empty()) << "step " << i << " of the other run never launched";
    ASSERT_TRUE(WriteFileAtomic(launch.env.at("RSL_OUTPUT") + "/who", "other").ok());
    f.backend.Succeed(launch.attempt_id);
  }
  auto done = f.engine->Wait(*other, 20'000);
  ASSERT_TRUE(done.ok()) << done.error().ToString();
  EXPECT_EQ(done->phase, spec::RunPhase::kSucceeded) << done->failure_message;
  EXPECT_EQ(f.ManifestRun(elsewhere), done->id);
  // The first run is still uploading: running, committing, its manifest not written.
  auto running = f.store->GetRun(first);
  ASSERT_TRUE(running.ok());
  EXPECT_EQ(running->phase, spec::RunPhase::kRunning);
  EXPECT_EQ(running->commit_state, store::kCommitCommitting);
  EXPECT_EQ(f.ManifestRun(kBase), "");
  let_go();
  auto run = f.engine->Wait(*id, 60'000);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->phase, spec::RunPhase::kSucceeded) << run->failure_message;
  EXPECT_EQ(f.ManifestRun(kBase), first);
  EXPECT_EQ(f.objects->Below(kBase)["a/who"], first);
}

TEST(ObjectRootCommitTest, AFailedManifestWriteLeavesNoManifestNamingTheRun) {
  Fixture f("manifest-fails");
  auto first = f.RunToEnd(Steps(kBase, "replace", {"a"}));
  ASSERT_EQ(first.phase, spec::RunPhase::kSucceeded);
  f.objects->fail_writes_to = std::string(kBase) + "/" + kCommitManifestName;
  auto failed = f.RunToEnd(Steps(kBase, "replace", {"a", "b"}));
  EXPECT_EQ(failed.phase, spec::RunPhase::kFailed);
  EXPECT_EQ(failed.failure_code, codes::kDataSourceUnreachable);
  EXPECT_NE(failed.failure_message.find("cannot write the manifest"), std::string::npos)
      << failed.failure_message;
  EXPECT_EQ(f.ManifestRun(kBase), "");  // no manifest: the root is not committed
  // What it published is removed, and its lease released.
  EXPECT_TRUE(f.objects->Below(kBase).empty());
  auto discarded = f.Events(failed.id, "OutputDiscarded");
  ASSERT_EQ(discarded.size(), 1u);
  EXPECT_EQ(discarded[0].message, "published and staged outputs removed");
  // The next commit goes through.
  f.objects->fail_writes_to.clear();
  auto next = f.RunToEnd(Steps(kBase, "replace", {"a"}));
  EXPECT_EQ(next.phase, spec::RunPhase::kSucceeded) << next.failure_message;
  EXPECT_EQ(f.ManifestRun(kBase), next.id);
}

TEST(ObjectRootCommitTest, ACommitThatLostItsLeaseFailsAndLeavesTheRootToTheNewHolder) {
  Fixture f("lost");
  // While the commit uploads, its lease expires and another controller takes it over.
  f.objects->on_publish = [&](const std::string&) {
    LeaseRecord other{"run-other", "elsewhere:2", "t2", f.env.NowMs() + kObjectLeaseTtlMs};
    f.objects->Put(ObjectLeaseUri(kBase), LeaseJson(other));
  };
  auto run = f.RunToEnd(Steps(kBase, "replace", {"a"}));
  EXPECT_EQ(run.phase, spec::RunPhase::kFailed);
  EXPECT_EQ(run.failure_code, codes::kOutputConflict);
  EXPECT_NE(run.failure_message.find("held by run run-other"), std::string::npos)
      << run.failure_message;
  EXPECT_EQ(f.ManifestRun(kBase), "");
  // Its upload is not undone (the root is the other run's now), nor the other's lease.
  EXPECT_EQ(f.objects->Below(kBase)["a/who"], run.id);
  EXPECT_EQ(ParseLease(f.objects->ReadObject(ObjectLeaseUri(kBase))->bytes)->run_id, "run-other");
  auto discarded = f.Events(run.id, "OutputDiscarded");
  ASSERT_EQ(discarded.size(), 1u);
  EXPECT_NE(discarded[0].message.find("left to the run that holds it"), std::string::npos)
      << discarded[0].message;
}

TEST(ObjectRootCommitTest, VersionedCommitsUnderTheRunIdAndMovesLatest) {
  Fixture f("versioned");
  auto first = f.RunToEnd(Steps(kBase, "versioned", {"a"}));
  ASSERT_EQ(first.phase, spec::RunPhase::kSucceeded) << first.failure_message;
  auto second = f.RunToEnd(Steps(kBase, "versioned", {"a"}));
  ASSERT_EQ(second.phase, spec::RunPhase::kSucceeded) << second.failure_message;
  EXPECT_EQ(f.objects->ReadObject(ObjectLatestUri(kBase))->bytes, second.id);
  EXPECT_EQ(f.ManifestRun(std::string(kBase) + "/" + first.id), first.id);
  EXPECT_EQ(f.ManifestRun(std::string(kBase) + "/" + second.id), second.id);
  EXPECT_EQ(f.objects->Below(kBase)[second.id + "/a/who"], second.id);
  auto committed = f.Events(second.id, "OutputCommitted");
  ASSERT_EQ(committed.size(), 1u);
  EXPECT_NE(committed[0].message.find(ObjectLatestUri(kBase) + " -> " + second.id),
            std::string::npos)
      << committed[0].message;
  EXPECT_TRUE(f.Events(first.id, "OutputSuperseded").empty());  // versioned keeps both
}

// --- policy refuse: claims ----------------------------------------------------------------

std::string ClaimRun(FakeObjectStore* store, const std::string& run_id) {
  auto o = store->ReadObject(ObjectClaimUri(kBase, run_id));
  if (!o.ok()) return "";
  auto c = ParseClaim(o->bytes);
  return c.ok() ? c->run_id : "(unreadable)";
}

TEST(ObjectClaimTest, ARefuseAdmissionIsRefusedWhileAnotherRunsClaimIsLive) {
  FakeObjectStore store;
  FakeEnv env;
  // A run of any policy claims the root while it is in flight.
  auto a = ObjectClaim::Take(&store, &env, kBase, "run-a", /*refuse=*/false);
  ASSERT_TRUE(a.ok()) << a.error().ToString();
  auto held = ParseClaim(store.ReadObject(ObjectClaimUri(kBase, "run-a"))->bytes);
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(held->expires_at_ms, env.NowMs() + kObjectClaimTtlMs);
  auto b = ObjectClaim::Take(&store, &env, kBase, "run-b", /*refuse=*/true);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().code, codes::kOutputConflict);
  EXPECT_EQ(b.error().message,
            "run run-a (" + held->holder +
                ") is writing to the same output root s3://bucket/models/fraud, and "
                "data.output.policy is refuse; its claim expires at " +
                FormatUtc(held->expires_at_ms / 1000, "%Y-%m-%dT%H:%M:%SZ") + " unless renewed");
  EXPECT_EQ(b.error().path, "spec.data.output.uri");
  EXPECT_EQ(b.error().value, kBase);
  EXPECT_EQ(b.error().hint,
            "wait for run-a to end (its claim s3://bucket/models/fraud/.rsl-output/claims/run-a "
            "is removed then, or expires 300 s after its controller stops renewing it), or "
            "choose policy: replace or policy: versioned");
  // No claim of its own, and the claims lock is let go.
  EXPECT_EQ(ClaimRun(&store, "run-b"), "");
  EXPECT_EQ(store.ReadObject(ObjectClaimsLockUri(kBase)).status().code(), codes::kNotFound);
  // A second run of another policy is not refused (replace and versioned share a root).
  auto c = ObjectClaim::Take(&store, &env, kBase, "run-c", false);
  ASSERT_TRUE(c.ok());
  // Both ended: admitted.
  (*a)->Release();
  (*c)->Release();
  EXPECT_EQ(ClaimRun(&store, "run-a"), "");
  auto again = ObjectClaim::Take(&store, &env, kBase, "run-b", true);
  ASSERT_TRUE(again.ok()) << again.error().ToString();
  EXPECT_EQ(ClaimRun(&store, "run-b"), "run-b");
}

TEST(ObjectClaimTest, AnExpiredClaimIsIgnoredAndRemovedAndARenewedOneIsNot) {
  FakeObjectStore store;
  FakeEnv env;
  ObjectClaimOptions minute{kOutputLockWaitMs, 60'000};
  auto live = ObjectClaim::Take(&store, &env, kBase, "run-live", false, minute);
  auto dead = ObjectClaim::Take(&store, &env, kBase, "run-dead", false, minute);
  ASSERT_TRUE(live.ok() && dead.ok());
  // Renewal is due a quarter of the ttl after the last write, not before.
  EXPECT_EQ((*live)->next_renewal_ms(), env.NowMs() + 15'000);
  env.Advance(40'000);
  ASSERT_TRUE((*live)->Renew().ok());  // run-dead's controller died: no renewal
  EXPECT_EQ((*live)->next_renewal_ms(), env.NowMs() + 15'000);
  env.Advance(20'001);  // run-dead expired, run-live (renewed 20 s ago) did not
  auto refused = ObjectClaim::Take(&store, &env, kBase, "run-x", true, minute);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, codes::kOutputConflict);
  EXPECT_EQ(refused.error().message.rfind("run run-live (", 0), 0u) << refused.error().message;
  EXPECT_EQ(ClaimRun(&store, "run-dead"), "");  // removed on the way
  // A claim object that is not one counts as expired, and a claim removed under its run (it
  // had expired) is written again by the next renewal.
  store.Put(ObjectClaimUri(kBase, "run-garbage"), "garbage");
  (void)store.Remove(ObjectClaimUri(kBase, "run-live"));
  auto admitted = ObjectClaim::Take(&store, &env, kBase, "run-y", true, minute);
  ASSERT_TRUE(admitted.ok()) << admitted.error().ToString();
  EXPECT_EQ(ClaimRun(&store, "run-garbage"), "");
  ASSERT_TRUE((*live)->Renew(/*force=*/true).ok());
  EXPECT_EQ(ClaimRun(&store, "run-live"), "run-live");
  // A store that fails: the error, and a retry well before the claim expires.
  store.fail_writes_to = ObjectClaimUri(kBase, "run-live");
  Status failed = (*live)->Renew(true);
  EXPECT_EQ(failed.code(), codes::kDataSourceUnreachable);
  EXPECT_EQ((*live)->failures(), 1);
  EXPECT_EQ((*live)->next_renewal_ms(), env.NowMs() + 15'000);
}

TEST(ObjectClaimTest, TwoRefuseAdmissionsAtOnceAdmitExactlyOne) {
  FakeObjectStore store;
  FakeEnv env;
  // run-b's admission starts while run-a's lists the claims (both would see none and both
  // claim, were it not for the claims lock): it finds the lock held.
  Result<std::unique_ptr<ObjectClaim>> b = Error(codes::kInternal, "not run");
  store.on_list = [&] {
    b = ObjectClaim::Take(&store, &env, kBase, "run-b", true, {0, kObjectClaimTtlMs});
  };
  auto a = ObjectClaim::Take(&store, &env, kBase, "run-a", true);
  ASSERT_TRUE(a.ok()) << a.error().ToString();
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().code, codes::kIoError);
  EXPECT_EQ(b.error().message.rfind("the claims of output root s3://bucket/models/fraud stayed "
                                    "locked by run run-a (",
                                    0),
            0u)
      << b.error().message;
  EXPECT_EQ(ClaimRun(&store, "run-b"), "");
  // Tried again once the lock is free, it sees run-a's claim.
  auto again = ObjectClaim::Take(&store, &env, kBase, "run-b", true);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, codes::kOutputConflict);
}

TEST(ObjectClaimTest, OfEightRefuseAdmissionsInThreadsExactlyOneIsAdmitted) {
  FakeObjectStore store;
  Env* env = Env::Default();  // real time: waiters poll the claims lock
  std::vector<std::thread> threads;
  std::mutex mu;
  std::vector<std::string> admitted;
  int refused = 0;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      auto c = ObjectClaim::Take(&store, env, kBase, "run-" + std::to_string(i), true);
      std::lock_guard<std::mutex> lock(mu);
      if (c.ok()) {
        admitted.push_back((*c)->run_id());
      } else {
        EXPECT_EQ(c.error().code, codes::kOutputConflict) << c.error().ToString();
        ++refused;
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(admitted.size(), 1u);
  EXPECT_EQ(refused, 7);
  std::vector<std::string> claims;
  for (const auto& [name, bytes] : store.Below(std::string(kBase) + "/.rsl-output/claims")) {
    claims.push_back(name);
  }
  EXPECT_EQ(claims, std::vector<std::string>{admitted[0]});
}

// Submits `w` on `f`'s engine and waits for its first step's launch (admitted: in flight).
std::string SubmitToFirstLaunch(Fixture& f, const spec::Workload& w, backend::LaunchSpec* l) {
  auto id = f.engine->Submit(w, "alice");
  EXPECT_TRUE(id.ok());
  *l = f.backend.WaitLaunch(++f.launched, 60'000);
  EXPECT_FALSE(l->attempt_id.empty());
  return id.ok() ? *id : "";
}

std::string RunIdOf(Fixture& f, const std::string& version_id) {
  auto run = f.store->GetRun(version_id);
  return run.ok() ? run->id : "";
}

TEST(ObjectClaimEngineTest, ARefuseRunOfAnotherControllerIsRejectedWhileOneIsInFlight) {
  Fixture one("claim-one");
  Fixture two("claim-two", one.objects);  // another controller, the same object store
  backend::LaunchSpec first_step;
  std::string first = SubmitToFirstLaunch(one, Steps(kBase, "refuse", {"a"}), &first_step);
  const std::string first_run = RunIdOf(one, first);
  EXPECT_EQ(ClaimRun(one.objects.get(), first_run), first_run);
  EXPECT_TRUE(std::filesystem::exists(one.dir + "/state/object-claims/" + first_run));
  auto refused = two.engine->Submit(Steps(kBase, "refuse", {"a"}), "bob");
  ASSERT_TRUE(refused.ok());
  auto rejected = two.engine->Wait(*refused, 60'000);
  ASSERT_TRUE(rejected.ok());
  EXPECT_EQ(rejected->phase, spec::RunPhase::kRejected);
  EXPECT_EQ(rejected->failure_code, codes::kOutputConflict);
  EXPECT_NE(rejected->failure_message.find("run " + first_run + " ("), std::string::npos)
      << rejected->failure_message;
  EXPECT_NE(rejected->failure_message.find("and data.output.policy is refuse; its claim expires"),
            std::string::npos)
      << rejected->failure_message;
  EXPECT_EQ(ClaimRun(one.objects.get(), rejected->id), "");
  // The first ends: its claim and its marker go, and the next refuse run is admitted.
  ASSERT_TRUE(WriteFileAtomic(first_step.env.at("RSL_OUTPUT") + "/who", first_run).ok());
  one.backend.Succeed(first_step.attempt_id);
  auto ended = one.engine->Wait(first, 60'000);
  ASSERT_TRUE(ended.ok());
  EXPECT_EQ(ended->phase, spec::RunPhase::kSucceeded) << ended->failure_message;
  one.WaitClaimGone(first_run);
  EXPECT_FALSE(std::filesystem::exists(one.dir + "/state/object-claims/" + first_run));
  auto next = two.RunToEnd(Steps(kBase, "refuse", {"a"}));
  EXPECT_EQ(next.phase, spec::RunPhase::kSucceeded) << next.failure_message;
  EXPECT_TRUE(one.objects->Below(std::string(kBase) + "/.rsl-output").empty());
}

TEST(ObjectClaimEngineTest, AFailedOrCancelledRunRemovesItsClaim) {
  Fixture f("claim-ends");
  backend::LaunchSpec l;
  std::string failing = SubmitToFirstLaunch(f, Steps(kBase, "refuse", {"a"}), &l);
  EXPECT_EQ(ClaimRun(f.objects.get(), RunIdOf(f, failing)), RunIdOf(f, failing));
  f.backend.Fail(l.attempt_id, backend::ExitKind::kFailed);
  auto failed = f.engine->Wait(failing, 60'000);
  ASSERT_TRUE(failed.ok());
  EXPECT_EQ(failed->phase, spec::RunPhase::kFailed);
  f.WaitClaimGone(failed->id);
  std::string cancelling = SubmitToFirstLaunch(f, Steps(kBase, "replace", {"a"}), &l);
  EXPECT_EQ(ClaimRun(f.objects.get(), RunIdOf(f, cancelling)), RunIdOf(f, cancelling));
  ASSERT_TRUE(f.engine->Cancel(cancelling, "alice").ok());
  auto cancelled = f.engine->Wait(cancelling, 60'000);
  ASSERT_TRUE(cancelled.ok());
  EXPECT_EQ(cancelled->phase, spec::RunPhase::kCancelled);
  f.WaitClaimGone(cancelled->id);
  EXPECT_TRUE(f.objects->Below(std::string(kBase) + "/.rsl-output").empty());
  EXPECT_TRUE(std::filesystem::is_empty(f.dir + "/state/object-claims"));
}

TEST(ObjectClaimEngineTest, TheLoopRenewsTheClaimOfARunInFlight) {
  Fixture f("claim-renewed");
  backend::LaunchSpec l;
  std::string id = SubmitToFirstLaunch(f, Steps(kBase, "replace", {"a"}), &l);
  const std::string run_id = RunIdOf(f, id);
  auto expiry = [&] {
    auto o = f.objects->ReadObject(ObjectClaimUri(kBase, run_id));
    return o.ok() ? ParseClaim(o->bytes)->expires_at_ms : 0;
  };
  const int64_t first = expiry();
  EXPECT_EQ(first, f.env.NowMs() + kObjectClaimTtlMs);  // fake time stands still so far
  f.env.Advance(kObjectClaimTtlMs / 4 + 1);             // due
  const int64_t renewed_to = f.env.NowMs() + kObjectClaimTtlMs;
  // The loop wakes for it by itself (nothing else happens in this run meanwhile).
  for (int i = 0; i < 60'000 && expiry() != renewed_to; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(expiry(), renewed_to);
  f.backend.Succeed(l.attempt_id);
  ASSERT_TRUE(f.engine->Wait(id, 60'000).ok());
  f.WaitClaimGone(run_id);
}

TEST(ObjectClaimEngineTest, RecoveryResumesTheClaimOfARunInFlightAndRemovesAnEndedRunsOne) {
  Fixture f("claim-recovered");
  backend::LaunchSpec l;
  std::string id = SubmitToFirstLaunch(f, Steps(kBase, "refuse", {"a"}), &l);
  const std::string run_id = RunIdOf(f, id);
  // The engine dies with the run in flight; it comes back after the claim expired (another
  // admission removed it).
  f.engine->Stop(false);
  f.env.Advance(kObjectClaimTtlMs + 1);
  ASSERT_TRUE(f.objects->Remove(ObjectClaimUri(kBase, run_id)).ok());
  f.engine.reset();
  f.StartEngine();
  ASSERT_TRUE(f.engine->Recover().ok());
  ASSERT_TRUE(f.backend.WaitAdopted(1, 60'000));
  auto resumed = ParseClaim(f.objects->ReadObject(ObjectClaimUri(kBase, run_id))->bytes);
  ASSERT_TRUE(resumed.ok());
  EXPECT_EQ(resumed->expires_at_ms, f.env.NowMs() + kObjectClaimTtlMs);
  f.backend.Succeed(l.attempt_id);
  auto ended = f.engine->Wait(id, 60'000);
  ASSERT_TRUE(ended.ok());
  EXPECT_EQ(ended->phase, spec::RunPhase::kSucceeded) << ended->failure_message;
  f.WaitClaimGone(run_id);
  // An engine killed after the run's end was durable, before it removed the claim: the claim
  // and its marker are left; recovery removes both.
  ClaimRecord left{run_id, "here:1", f.env.NowMs() + kObjectClaimTtlMs};
  f.objects->Put(ObjectClaimUri(kBase, run_id), ClaimJson(left));
  ASSERT_TRUE(
      WriteFileAtomic(f.dir + "/state/object-claims/" + run_id, ObjectClaimUri(kBase, run_id))
          .ok());
  f.Restart();
  EXPECT_EQ(ClaimRun(f.objects.get(), run_id), "");
  EXPECT_FALSE(std::filesystem::exists(f.dir + "/state/object-claims/" + run_id));
}

// --- atomic: false ------------------------------------------------------------------------

spec::Workload NonAtomic(const std::string& policy, const std::vector<std::string>& steps) {
  spec::Workload w = Steps(kBase, policy, steps);
  w.pipeline.atomic = false;
  return w;
}

TEST(ObjectRootNonAtomicTest, EachStepIsPublishedUnderTheCommitLease) {
  Fixture f("non-atomic");
  // Another run's commit holds the lease (live): the step's publication waits for it on the
  // run's timer (the loop goes on: another run ends meanwhile), and after 2 minutes fails,
  // naming it.
  LeaseRecord other{"run-other", "elsewhere:3", "t3", f.env.NowMs() + 60 * 60 * 1000};
  f.objects->Put(ObjectLeaseUri(kBase), LeaseJson(other));
  auto id = f.engine->Submit(NonAtomic("replace", {"a"}), "alice");
  ASSERT_TRUE(id.ok());
  auto l = f.backend.WaitLaunch(++f.launched);
  ASSERT_TRUE(WriteFileAtomic(l.env.at("RSL_OUTPUT") + "/who", l.env.at("RSL_RUN_ID")).ok());
  f.backend.Succeed(l.attempt_id);
  const std::string waiting = store::RunIdFor(*id);
  ASSERT_TRUE(f.WaitForEvent(waiting, "OutputCommitWaiting"));
  EXPECT_EQ(f.Events(waiting, "OutputCommitWaiting")[0].step, "a");
  auto elsewhere = f.RunToEnd(Steps(std::string(kBase) + "-elsewhere", "replace", {"b"}));
  EXPECT_EQ(elsewhere.phase, spec::RunPhase::kSucceeded) << elsewhere.failure_message;
  EXPECT_EQ(f.store->GetRun(waiting)->phase, spec::RunPhase::kRunning);  // ends after them
  f.env.Advance(kOutputLockWaitMs);
  auto ended = f.engine->Wait(*id, 60'000);
  ASSERT_TRUE(ended.ok());
  f.WaitClaimGone(ended->id);
  const store::Run& blocked = *ended;
  auto failed = f.Events(blocked.id, "OutputCommitFailed");
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].message.rfind("output root s3://bucket/models/fraud stayed locked by run "
                                    "run-other (elsewhere:3) for 120 s",
                                    0),
            0u)
      << failed[0].message;
  EXPECT_EQ(f.objects->Below(kBase).count("a/who"), 0u);
  // Free: published, and the lease let go.
  ASSERT_TRUE(f.objects->Remove(ObjectLeaseUri(kBase)).ok());
  auto run = f.RunToEnd(NonAtomic("replace", {"a", "b"}));
  ASSERT_EQ(run.phase, spec::RunPhase::kSucceeded) << run.failure_message;
  EXPECT_EQ(f.objects->Below(kBase)["a/who"], run.id);
  EXPECT_EQ(f.objects->Below(kBase)["b/who"], run.id);
  EXPECT_EQ(f.objects->ReadObject(ObjectLeaseUri(kBase)).status().code(), codes::kNotFound);
  EXPECT_EQ(f.Events(run.id, "OutputCommitted").size(), 2u);
}

// A publication that waited for the lease when its engine stopped is not lost: the
// recovered engine publishes the succeeded step before the run ends.
TEST(ObjectRootNonAtomicTest, APublicationWaitingWhenTheEngineStopsIsMadeAfterRecovery) {
  Fixture f("non-atomic-recover");
  LeaseRecord other{"run-other", "elsewhere:3", "t3", f.env.NowMs() + 60 * 60 * 1000};
  f.objects->Put(ObjectLeaseUri(kBase), LeaseJson(other));
  auto id = f.engine->Submit(NonAtomic("replace", {"a"}), "alice");
  ASSERT_TRUE(id.ok());
  auto l = f.backend.WaitLaunch(++f.launched);
  ASSERT_TRUE(WriteFileAtomic(l.env.at("RSL_OUTPUT") + "/who", l.env.at("RSL_RUN_ID")).ok());
  f.backend.Succeed(l.attempt_id);
  const std::string run_id = store::RunIdFor(*id);
  ASSERT_TRUE(f.WaitForEvent(run_id, "OutputCommitWaiting"));
  f.Restart();
  ASSERT_TRUE(f.objects->Remove(ObjectLeaseUri(kBase)).ok());  // the other commit ended
  f.env.Advance(1'000);
  auto run = f.engine->Wait(*id, 60'000);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->phase, spec::RunPhase::kSucceeded) << run->failure_message;
  EXPECT_EQ(f.objects->Below(kBase)["a/who"], run_id);
}

TEST(ObjectRootNonAtomicTest, VersionedMovesLatestWhenTheRunSucceeds) {
  Fixture f("non-atomic-versioned");
  auto first = f.RunToEnd(NonAtomic("versioned", {"a"}));
  ASSERT_EQ(first.phase, spec::RunPhase::kSucceeded) << first.failure_message;
  EXPECT_EQ(f.objects->ReadObject(ObjectLatestUri(kBase))->bytes, first.id);
  auto second = f.RunToEnd(NonAtomic("versioned", {"a"}));
  ASSERT_EQ(second.phase, spec::RunPhase::kSucceeded) << second.failure_message;
  EXPECT_EQ(f.objects->ReadObject(ObjectLatestUri(kBase))->bytes, second.id);
  EXPECT_EQ(f.objects->Below(kBase)[first.id + "/a/who"], first.id);
  EXPECT_EQ(f.objects->Below(kBase)[second.id + "/a/who"], second.id);
  bool moved = false;
  for (const auto& e : f.Events(second.id, "OutputCommitted")) {
    if (e.message.find("; " + ObjectLatestUri(kBase) + " -> " + second.id) != std::string::npos)
      moved = true;
  }
  EXPECT_TRUE(moved);
  EXPECT_EQ(f.objects->ReadObject(ObjectLeaseUri(kBase)).status().code(), codes::kNotFound);
}

}  // namespace
}  // namespace rsl::engine
