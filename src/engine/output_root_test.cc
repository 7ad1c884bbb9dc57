// Two runs, one output root (docs/engine.md "Two runs, one output root"): the lock and the
// claims on their own, then the three policies through the engine with a fake backend over
// real files and the real SQLite store.
#include "engine/output_root.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <thread>

#include "base/codes.h"
#include "base/commit_manifest.h"
#include "base/fault_env.h"
#include "base/file.h"
#include "engine/engine.h"
#include "engine/testing.h"
#include "spec/parse.h"

namespace rsl::engine {
namespace {

using testing::FakeBackend;

std::string FreshDir(const std::string& name) {
  std::string dir =
      ::testing::TempDir() + "output_root_test_" + name + "_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(OutputRootTest, TheControlDirectoryIsBesideTheRoot) {
  EXPECT_EQ(OutputControlDir("/data/out"), "/data/.out.rsl-output");
  EXPECT_EQ(OutputControlDir("/data/out/"), "/data/.out.rsl-output");
  EXPECT_EQ(OutputControlDir("out"), ".out.rsl-output");
}

TEST(OutputRootTest, AClaimOfARunInFlightRefusesAnotherAndAStaleOneIsRemoved) {
  std::string dir = FreshDir("claims");
  Env* env = Env::Default();
  std::string root = dir + "/out";
  // Run A is in flight: its engine holds its owner lock.
  ASSERT_TRUE(env->MakeDirs(dir + "/runs/run-a").ok());
  auto owner = env->LockFile(dir + "/runs/run-a/owner.lock", 0);
  ASSERT_TRUE(owner.ok());
  ASSERT_TRUE(ClaimOutputRoot(env, root, "run-a", dir + "/runs/run-a", true).ok());
  EXPECT_FALSE(env->PathExists(root));  // nothing in the root before a commit
  Status refused = ClaimOutputRoot(env, root, "run-b", dir + "/runs/run-b", true);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.code(), codes::kOutputConflict);
  EXPECT_EQ(refused.error().message, "run run-a is writing to the same output root " + root +
                                         ", and data.output.policy is refuse");
  EXPECT_EQ(refused.error().path, "spec.data.output.uri");
  EXPECT_EQ(refused.error().hint,
            "wait for run-a to end (seedctl workload status --id run-a --watch), or choose "
            "policy: replace or policy: versioned");
  // Policy replace claims beside it.
  EXPECT_TRUE(ClaimOutputRoot(env, root, "run-c", dir + "/runs/run-c", false).ok());
  // A's engine is gone without releasing its claim: the claim is stale, B is admitted.
  owner->reset();
  ASSERT_TRUE(ClaimOutputRoot(env, root, "run-b", dir + "/runs/run-b", true).ok());
  auto claims = env->ListDir(OutputControlDir(root) + "/runs");
  ASSERT_TRUE(claims.ok());
  EXPECT_EQ(claims->size(), 1u);  // B's; A's and C's (no owner lock) were stale
  ReleaseOutputClaim(env, root, "run-b");
  EXPECT_TRUE(env->ListDir(OutputControlDir(root) + "/runs")->empty());
}

TEST(OutputRootTest, LatestMovesInOneRename) {
  std::string dir = FreshDir("latest");
  Env* env = Env::Default();
  ASSERT_TRUE(env->MakeDirs(dir + "/run-1").ok());
  ASSERT_TRUE(env->MakeDirs(dir + "/run-2").ok());
  ASSERT_TRUE(MoveLatest(env, dir, "run-1").ok());
  EXPECT_EQ(std::filesystem::read_symlink(dir + "/latest"), "run-1");
  ASSERT_TRUE(MoveLatest(env, dir, "run-2").ok());
  EXPECT_EQ(std::filesystem::read_symlink(dir + "/latest"), "run-2");
  EXPECT_EQ(env->ListDir(dir)->size(), 3u);  // run-1, run-2, latest: no temporary left
  // A failed rename leaves the pointer where it was.
  FaultEnv faults(env);
  faults.FailNth(FaultEnv::Op::kRename, 1, EIO);
  EXPECT_FALSE(MoveLatest(&faults, dir, "run-1").ok());
  EXPECT_EQ(std::filesystem::read_symlink(dir + "/latest"), "run-2");
  EXPECT_EQ(env->ListDir(dir)->size(), 3u);
}

spec::Workload Parse(const std::string& yaml) {
  auto r = spec::ParseWorkload(yaml, "test.yaml");
  EXPECT_TRUE(r.ok()) << (r.errors.empty() ? "" : r.errors[0].ToString());
  return r.workload;
}

// Steps named in `steps`, atomic, into `root` with `policy`.
spec::Workload Steps(const std::string& root, const std::string& policy,
                     const std::vector<std::string>& steps) {
  std::string yaml =
      "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata:\n  name: shared\n"
      "  namespace: risk\nspec:\n  data:\n    output:\n      uri: file://" +
      root + "\n      policy: " + policy + "\n  pipeline:\n";
  for (const auto& s : steps) yaml += "    - {name: " + s + ", command: [" + s + "]}\n";
  return Parse(yaml);
}

struct Fixture {
  explicit Fixture(const std::string& name) : dir(FreshDir(name)) {
    auto s = store::OpenSqliteStore(dir + "/state");
    EXPECT_TRUE(s.ok());
    store = std::move(*s);
    EngineOptions opts;
    opts.state_dir = dir + "/state";
    opts.env = &env;
    engine = std::make_unique<Engine>(store.get(), &backend, Hooks{}, opts);
    EXPECT_TRUE(engine->Start().ok());
  }
  // Submits `w` and ends its next `steps` launches successfully, each writing its run id.
  std::string RunToEnd(const spec::Workload& w, size_t* launched) {
    auto id = engine->Submit(w, "alice");
    EXPECT_TRUE(id.ok());
    for (size_t i = 0; i < w.pipeline.steps.size(); ++i) {
      auto l = backend.WaitLaunch(++*launched);
      EXPECT_TRUE(WriteFileAtomic(l.env.at("RSL_OUTPUT") + "/who", l.env.at("RSL_RUN_ID")).ok());
      backend.Succeed(l.attempt_id);
    }
    auto run = engine->Wait(*id, 10'000);
    EXPECT_TRUE(run.ok());
    EXPECT_EQ(run->phase, spec::RunPhase::kSucceeded) << run->failure_message;
    return run->id;
  }
  std::vector<store::Event> Events(const std::string& run_id, const std::string& reason) {
    std::vector<store::Event> out;
    auto events = store->ListEvents(run_id, 0);
    for (const auto& e : *events) {
      if (e.reason == reason) out.push_back(e);
    }
    return out;
  }
  std::string dir;
  FakeClockEnv env;
  FakeBackend backend;
  std::unique_ptr<store::Store> store;
  std::unique_ptr<Engine> engine;
};

std::string ManifestRun(const std::string& dir) {
  auto text = ReadFile(dir + "/_RSL_COMMIT");
  if (!text.ok()) return "";
  auto m = ParseCommitManifest(*text);
  return m.ok() ? m->run_id : "";
}

TEST(OutputPolicyTest, ReplaceRecordsTheReplacedRunAsSuperseded) {
  Fixture f("replace");
  std::string root = f.dir + "/out";
  size_t launched = 0;
  std::string first = f.RunToEnd(Steps(root, "replace", {"a", "b"}), &launched);
  std::string second = f.RunToEnd(Steps(root, "replace", {"a"}), &launched);
  // The root holds the second run's outputs only: its `a`, and not the first run's `b`.
  EXPECT_EQ(ManifestRun(root), second);
  EXPECT_EQ(*ReadFile(root + "/a/who"), second);
  EXPECT_FALSE(PathExists(root + "/b"));
  auto superseded = f.Events(first, "OutputSuperseded");
  ASSERT_EQ(superseded.size(), 1u);
  EXPECT_EQ(superseded[0].type, "Warning");
  EXPECT_EQ(superseded[0].message, "the outputs under " + root + " were replaced by run " + second +
                                       " (workload " + f.store->GetRun(second)->workload_id +
                                       "); this run's outputs are gone from there");
  bool named = false;
  auto first_lineage = f.store->ListLineage(first);
  for (const auto& e : *first_lineage) {
    named = named || (e.relation == "superseded-by" && e.from == root && e.to == second);
  }
  EXPECT_TRUE(named);
  bool supersedes = false;
  auto second_lineage = f.store->ListLineage(second);
  for (const auto& e : *second_lineage) {
    supersedes = supersedes || (e.relation == "supersedes" && e.from == first && e.to == root);
  }
  EXPECT_TRUE(supersedes);
  auto committed = f.Events(second, "OutputCommitted");
  ASSERT_EQ(committed.size(), 1u);
  EXPECT_NE(committed[0].message.find("replaced the outputs of run " + first), std::string::npos)
      << committed[0].message;
  EXPECT_TRUE(f.Events(second, "OutputSuperseded").empty());
  // Both ended; no claim is left beside the root.
  EXPECT_TRUE(Env::Default()->ListDir(OutputControlDir(root) + "/runs")->empty());
}

TEST(OutputPolicyTest, RefuseRejectsASecondRunWhileTheFirstIsInFlight) {
  Fixture f("refuse");
  std::string root = f.dir + "/out";
  auto first = f.engine->Submit(Steps(root, "refuse", {"a"}), "alice");
  ASSERT_TRUE(first.ok());
  auto a = f.backend.WaitLaunch(1);  // in flight
  auto second = f.engine->Submit(Steps(root, "refuse", {"a"}), "bob");
  ASSERT_TRUE(second.ok());
  auto refused = f.engine->Wait(*second, 10'000);
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->phase, spec::RunPhase::kRejected);
  EXPECT_EQ(refused->failure_code, codes::kOutputConflict);
  EXPECT_NE(refused->failure_message.find("run " + store::RunIdFor(*first) +
                                          " is writing to the same output root " + root),
            std::string::npos)
      << refused->failure_message;
  EXPECT_EQ(f.backend.launch_count(), 1u);  // nothing of the second run started
  ASSERT_TRUE(WriteFileAtomic(a.env.at("RSL_OUTPUT") + "/who", "first").ok());
  f.backend.Succeed(a.attempt_id);
  ASSERT_EQ(f.engine->Wait(*first, 10'000)->phase, spec::RunPhase::kSucceeded);
  // Once the first has ended, a third is admitted.
  size_t launched = 1;
  std::string third = f.RunToEnd(Steps(root, "refuse", {"a"}), &launched);
  EXPECT_EQ(ManifestRun(root), third);
}

TEST(OutputPolicyTest, VersionedKeepsEveryRunAndMovesLatest) {
  Fixture f("versioned");
  std::string root = f.dir + "/out";
  size_t launched = 0;
  std::string first = f.RunToEnd(Steps(root, "versioned", {"a", "b"}), &launched);
  EXPECT_EQ(std::filesystem::read_symlink(root + "/latest"), first);
  std::string second = f.RunToEnd(Steps(root, "versioned", {"a"}), &launched);
  EXPECT_EQ(std::filesystem::read_symlink(root + "/latest"), second);
  for (const auto& run : {first, second}) {
    EXPECT_EQ(ManifestRun(root + "/" + run), run);
    EXPECT_EQ(*ReadFile(root + "/" + run + "/a/who"), run);
    EXPECT_EQ(f.store->GetRun(run)->committed_uri, root + "/" + run);
    EXPECT_TRUE(f.Events(run, "OutputSuperseded").empty());
  }
  EXPECT_EQ(*ReadFile(root + "/" + first + "/b/who"), first);
  EXPECT_EQ(*ReadFile(root + "/latest/a/who"), second);
  auto artifacts = *f.store->ListArtifacts(first);
  ASSERT_EQ(artifacts.size(), 2u);
  EXPECT_EQ(artifacts[0].uri, root + "/" + first + "/a");
}

// The lock of the root cannot be taken (a full disk beside it, an NFS without locks): the
// commit fails as any other I/O failure of a commit, and the older commit stays whole.
TEST(OutputPolicyTest, ALockThatCannotBeTakenFailsTheCommitAndKeepsTheOlderOne) {
  Fixture f("lockfail");
  std::string root = f.dir + "/out";
  size_t launched = 0;
  std::string first = f.RunToEnd(Steps(root, "replace", {"a"}), &launched);
  FaultEnv faults(&f.env);
  f.engine.reset();
  EngineOptions opts;
  opts.state_dir = f.dir + "/state";
  opts.env = &faults;
  f.engine = std::make_unique<Engine>(f.store.get(), &f.backend, Hooks{}, opts);
  ASSERT_TRUE(f.engine->Start().ok());
  auto id = f.engine->Submit(Steps(root, "replace", {"a"}), "alice");
  ASSERT_TRUE(id.ok());
  auto l = f.backend.WaitLaunch(++launched);
  ASSERT_TRUE(WriteFileAtomic(l.env.at("RSL_OUTPUT") + "/who", "second").ok());
  faults.FailNth(FaultEnv::Op::kLock, 1, ENOLCK);
  f.backend.Succeed(l.attempt_id);
  auto run = f.engine->Wait(*id, 10'000);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->phase, spec::RunPhase::kFailed);
  EXPECT_EQ(run->failure_code, codes::kIoError);
  EXPECT_EQ(run->failure_message, "output commit failed: cannot open lock " +
                                      OutputControlDir(root) + "/lock: " + strerror(ENOLCK));
  EXPECT_EQ(ManifestRun(root), first);
  EXPECT_EQ(*ReadFile(root + "/a/who"), first);
  EXPECT_TRUE(f.Events(first, "OutputSuperseded").empty());
  f.engine.reset();
}

// Up to 10 s of real time for `done`.
bool Eventually(const std::function<bool()>& done) {
  for (int i = 0; i < 1000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

// A commit whose root another commit holds waits on a timer, not in the engine's loop: the
// engine's other runs go on meanwhile (before, the loop waited for the lock, up to 2
// minutes, and every run of the engine with it).
TEST(OutputPolicyTest, ACommitWaitingForItsRootHoldsUpNoOtherRun) {
  Fixture f("wait");
  std::string root = f.dir + "/out";
  auto id = f.engine->Submit(Steps(root, "replace", {"a"}), "alice");
  ASSERT_TRUE(id.ok());
  const std::string waiting = store::RunIdFor(*id);
  auto l = f.backend.WaitLaunch(1);
  auto held = LockOutputRoot(Env::Default(), root, 0);  // another process's commit, meanwhile
  ASSERT_TRUE(held.ok()) << held.error().ToString();
  ASSERT_TRUE(WriteFileAtomic(l.env.at("RSL_OUTPUT") + "/who", waiting).ok());
  f.backend.Succeed(l.attempt_id);
  ASSERT_TRUE(Eventually([&] { return !f.Events(waiting, "OutputCommitWaiting").empty(); }));
  size_t launched = 1;
  std::string other = f.RunToEnd(Steps(f.dir + "/elsewhere", "replace", {"b"}), &launched);
  EXPECT_EQ(ManifestRun(f.dir + "/elsewhere"), other);
  f.env.Advance(10'000);  // retried (and still held) a few times
  ASSERT_TRUE(
      Eventually([&] { return f.store->GetRun(waiting)->phase == spec::RunPhase::kRunning; }));
  EXPECT_FALSE(PathExists(root + "/a"));
  held->reset();  // the other commit ends
  f.env.Advance(2'000);
  auto run = f.engine->Wait(*id, 10'000);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->phase, spec::RunPhase::kSucceeded) << run->failure_message;
  EXPECT_EQ(ManifestRun(root), waiting);
  auto told = f.Events(waiting, "OutputCommitWaiting");
  ASSERT_EQ(told.size(), 1u);  // once per wait, not per retry
  EXPECT_EQ(told[0].message,
            "waiting for output root " + root + ": another run is committing there");
}

TEST(OutputPolicyTest, ARootHeldPastTheWaitFailsTheCommitNamingTheLock) {
  Fixture f("waitends");
  std::string root = f.dir + "/out";
  auto id = f.engine->Submit(Steps(root, "replace", {"a"}), "alice");
  ASSERT_TRUE(id.ok());
  auto l = f.backend.WaitLaunch(1);
  auto held = LockOutputRoot(Env::Default(), root, 0);
  ASSERT_TRUE(held.ok());
  f.backend.Succeed(l.attempt_id);
  const std::string run_id = store::RunIdFor(*id);
  ASSERT_TRUE(Eventually([&] { return !f.Events(run_id, "OutputCommitWaiting").empty(); }));
  f.env.Advance(kOutputLockWaitMs);
  auto run = f.engine->Wait(*id, 10'000);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->phase, spec::RunPhase::kFailed);
  EXPECT_EQ(run->failure_code, codes::kIoError);
  EXPECT_EQ(run->failure_message, "output commit failed: output root " + root +
                                      " stayed locked by another commit for 120 s");
  EXPECT_FALSE(PathExists(root + "/a"));
}

}  // namespace
}  // namespace rsl::engine
