// Two runs, one object-store output root (docs/engine.md "Two runs, one output root"): the
// lease and the manifest on a fake object store with S3's conditional writes, then the
// commit through the engine. The same protocol against a real radosgw:
// tests/data/s3_commit_test.cc (label s3).
#include "engine/object_root.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "base/codes.h"
#include "base/commit_manifest.h"
#include "base/fake_env.h"
#include "base/file.h"
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
  explicit Fixture(const std::string& name)
      : dir(::testing::TempDir() + "object_root_test_" + name + "_" + std::to_string(getpid())),
        objects(std::make_shared<FakeObjectStore>()) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    auto s = store::OpenSqliteStore(dir + "/state");
    EXPECT_TRUE(s.ok());
    store = std::move(*s);
    EngineOptions opts;
    opts.state_dir = dir + "/state";
    opts.env = &env;
    Hooks hooks;
    hooks.publisher = objects;
    engine = std::make_unique<Engine>(store.get(), &backend, hooks, opts);
    EXPECT_TRUE(engine->Start().ok());
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
    return *run;
  }
  std::vector<store::Event> Events(const std::string& run_id, const std::string& reason) {
    std::vector<store::Event> out;
    auto events = store->ListEvents(run_id, 0);
    for (const auto& e : *events) {
      if (e.reason == reason) out.push_back(e);
    }
    return out;
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

}  // namespace
}  // namespace rsl::engine
