// The engine under faults (docs/engine.md "Faults"): every rename, fsync, write and removal
// of an output commit failed in turn through a FaultEnv, and store transactions failed
// through a FailingStore. Whatever fails, a run ends committed whole or discarded with the
// failure reported, never half; nothing is acted on before it is durable; and recovery with
// a good Env and store finishes what a stopped engine left.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>

#include <nlohmann/json.hpp>

#include "base/codes.h"
#include "base/fault_env.h"
#include "base/file.h"
#include "engine/engine.h"
#include "engine/testing.h"
#include "spec/parse.h"
#include "store/failing_store.h"

namespace rsl::engine {
namespace {

using testing::FakeBackend;
using Op = FaultEnv::Op;

std::string FreshDir(const std::string& name) {
  std::string dir = ::testing::TempDir() + "fault_test_" + name + "_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

spec::Workload Parse(const std::string& yaml) {
  auto r = spec::ParseWorkload(yaml, "test.yaml");
  EXPECT_TRUE(r.ok()) << (r.errors.empty() ? "" : r.errors[0].ToString());
  return r.workload;
}

// Three steps (`b` needs a retry), outputs to `output_uri` ("" = the run's own outputs/).
spec::Workload ThreeSteps(const std::string& output_uri) {
  std::string yaml =
      "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata:\n  name: faults\n"
      "  namespace: risk\nspec:\n";
  if (!output_uri.empty()) yaml += "  data:\n    output:\n      uri: " + output_uri + "\n";
  yaml +=
      "  pipeline:\n"
      "    - {name: a, command: [a]}\n"
      "    - {name: b, command: [b], retryPolicy: {maxRetries: 1, backoff: 0s}}\n"
      "    - {name: c, command: [c], dependsOn: [a, b]}\n";
  return Parse(yaml);
}

// The in-process FakeBackend checks, at every launch, that the attempt it is asked to start
// is already in the store: the engine never acts on a transition that is not durable.
class DurableCheckingBackend : public FakeBackend {
 public:
  store::Store* store = nullptr;
  std::atomic<int> undurable_launches{0};
  Status Launch(const backend::LaunchSpec& spec) override {
    bool found = false;
    auto attempts = store->ListAttempts(spec.env.at("RSL_RUN_ID"));
    for (const auto& a : attempts.ok() ? *attempts : std::vector<store::Attempt>{}) {
      found = found || a.id == spec.attempt_id;
    }
    if (!found) ++undurable_launches;
    return FakeBackend::Launch(spec);
  }
};

struct Fixture {
  explicit Fixture(const std::string& name) : dir(FreshDir(name)) {
    auto s = store::OpenSqliteStore(dir + "/state");
    EXPECT_TRUE(s.ok());
    sqlite = std::move(*s);
    failing = std::make_unique<store::FailingStore>(sqlite.get());
    backend.store = sqlite.get();
    Restart(&fault_env);
  }
  void Restart(Env* env) {
    engine.reset();
    EngineOptions opts;
    opts.state_dir = dir + "/state";
    opts.env = env;
    engine = std::make_unique<Engine>(failing.get(), &backend, Hooks{}, opts);
    EXPECT_TRUE(engine->Start().ok());
  }
  std::vector<std::string> Reasons(const std::string& run_id) {
    std::vector<std::string> out;
    auto events = sqlite->ListEvents(run_id, 0);
    for (const auto& e : *events) out.push_back(e.reason);
    return out;
  }
  // Runs the workload to its last exit: a succeeds, b fails once then succeeds (at once
  // when !retry_b), c succeeds after `before_last` (which arms the faults) ran. Each step
  // writes "<step>" to out.txt.
  std::string RunToLastExit(const spec::Workload& w, const std::function<void()>& before_last,
                            bool retry_b = true) {
    auto id = engine->Submit(w, "alice");
    EXPECT_TRUE(id.ok());
    size_t n = backend.launch_count();
    auto first = backend.WaitLaunch(n + 1);
    auto second = backend.WaitLaunch(n + 2);
    for (const auto& l : {first, second}) {
      if (l.step == "a" || !retry_b) {
        EXPECT_TRUE(WriteFileAtomic(l.env.at("RSL_OUTPUT") + "/out.txt", l.step).ok());
        backend.Succeed(l.attempt_id);
      } else {
        backend.Fail(l.attempt_id, backend::ExitKind::kFailed);
      }
    }
    if (retry_b) {
      auto retry = backend.WaitLaunch(n + 3);
      EXPECT_EQ(retry.step, "b");
      if (retry.step != "b") return *id;  // no retry launched: the failure above says so
      EXPECT_TRUE(WriteFileAtomic(retry.env.at("RSL_OUTPUT") + "/out.txt", "b").ok());
      backend.Succeed(retry.attempt_id);
    }
    auto last = backend.WaitLaunch(n + (retry_b ? 4 : 3));
    EXPECT_EQ(last.step, "c");
    if (last.step != "c") return *id;
    EXPECT_TRUE(WriteFileAtomic(last.env.at("RSL_OUTPUT") + "/out.txt", "c").ok());
    before_last();
    backend.Succeed(last.attempt_id);
    return *id;
  }

  std::string dir;
  FaultEnv fault_env;
  DurableCheckingBackend backend;
  std::unique_ptr<store::Store> sqlite;
  std::unique_ptr<store::FailingStore> failing;
  std::unique_ptr<Engine> engine;
};

bool Has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// The invariant of an output commit, whatever failed: SUCCEEDED with every output and the
// manifest, or FAILED with the failure reported, no manifest and none of the run's outputs
// under `root` (an older commit's outputs may stay, without their manifest unless they were
// never touched). Staging is gone either way.
void ExpectWholeOrNothing(Fixture& f, const store::Run& run, const std::string& root,
                          const std::string& what) {
  SCOPED_TRACE(what);
  auto reasons = f.Reasons(run.id);
  std::string messages;
  auto events = f.sqlite->ListEvents(run.id, 0);
  for (const auto& e : *events) messages += e.message + "\n";
  std::string manifest = root + "/_RSL_COMMIT";
  std::string staging = run.run_dir + "/staging";
  if (PathExists(staging)) {
    // Only when removing it failed, which the run's events say; never a published output.
    EXPECT_NE(messages.find("cannot remove"), std::string::npos) << messages;
    EXPECT_FALSE(PathExists(staging + "/a")) << messages;
    EXPECT_FALSE(PathExists(staging + "/c")) << messages;
  }
  if (IsDirectory(root)) {
    for (const auto& e : std::filesystem::directory_iterator(root)) {
      EXPECT_NE(e.path().filename().string().rfind(".rsl-trash-", 0), 0u) << e.path();
    }
  }
  if (run.phase == spec::RunPhase::kSucceeded) {
    EXPECT_EQ(run.commit_state, store::kCommitCommitted);
    EXPECT_TRUE(Has(reasons, "OutputCommitted"));
    auto m = nlohmann::json::parse(*ReadFile(manifest), nullptr, false);
    ASSERT_TRUE(m.is_object());
    EXPECT_EQ(m["run_id"], run.id);
    EXPECT_EQ(m["outputs"].size(), 3u);
    for (std::string step : {"a", "b", "c"}) {
      EXPECT_EQ(*ReadFile(root + "/" + step + "/out.txt"), step);
    }
    EXPECT_EQ(f.sqlite->ListArtifacts(run.id)->size(), 3u);
    return;
  }
  EXPECT_EQ(run.phase, spec::RunPhase::kFailed);
  EXPECT_EQ(run.failure_code, codes::kIoError);
  EXPECT_EQ(run.failure_message.rfind("output commit failed: ", 0), 0u) << run.failure_message;
  EXPECT_EQ(run.commit_state, store::kCommitDiscarded);
  EXPECT_TRUE(Has(reasons, "OutputCommitFailed"));
  EXPECT_TRUE(Has(reasons, "OutputDiscarded"));
  EXPECT_EQ(reasons.back(), "Failed");
  EXPECT_TRUE(f.sqlite->ListArtifacts(run.id)->empty());
  if (auto m = ReadFile(manifest); m.ok()) {
    // Only an older commit that this one never got to touch may still be there, whole.
    auto j = nlohmann::json::parse(*m, nullptr, false);
    EXPECT_NE(j["run_id"], run.id);
    EXPECT_EQ(*ReadFile(root + "/a/out.txt"), "old");
  }
  for (std::string step : {"a", "b", "c"}) {
    auto text = ReadFile(root + "/" + step + "/out.txt");
    EXPECT_TRUE(!text.ok() || *text == "old") << step << ": " << *text;
  }
}

struct Shape {
  std::string name;
  bool own_outputs;  // no data.output: staging becomes outputs/ in one rename
  // Every step succeeds at its first attempt: with own_outputs, the manifest is written into
  // staging before that rename (no rename of a later attempt's output after it).
  bool first_attempts = false;
};

// For one shape: runs once to count the commit's calls of each kind, then once per call
// of each kind with that call failed, checking the invariant each time and that a later
// engine with a good Env, recovering, leaves the result as it is and can commit again.
void FailEveryCallOfTheCommit(const Shape& shape) {
  struct Kind {
    Op op;
    int errnum;
  };
  const std::vector<Kind> kinds = {
      {Op::kRename, EIO},   {Op::kRename, EXDEV}, {Op::kSync, EIO},
      {Op::kWrite, ENOSPC}, {Op::kRemove, EIO},   {Op::kMakeDirs, ENOSPC},
      {Op::kList, EIO},     {Op::kLock, ENOLCK},  {Op::kRead, EIO}};
  auto setup = [&](Fixture& f) {
    std::string root = f.dir + "/published";
    if (!shape.own_outputs) {
      // An older commit is there: its output of `a` must be replaced, never mixed.
      EXPECT_TRUE(MakeDirs(root + "/a").ok());
      EXPECT_TRUE(WriteFileAtomic(root + "/a/out.txt", "old").ok());
      EXPECT_TRUE(WriteFileAtomic(root + "/_RSL_COMMIT", "{\"run_id\": \"run-old\"}\n").ok());
    }
    return ThreeSteps(shape.own_outputs ? "" : "file://" + root);
  };
  auto root_of = [&](Fixture& f, const store::Run& run) {
    return shape.own_outputs ? run.run_dir + "/outputs" : f.dir + "/published";
  };
  std::map<Op, int> calls;
  {
    Fixture f(shape.name + "_count");
    std::map<Op, int> before;
    auto id = f.RunToLastExit(
        setup(f),
        [&] {
          for (const auto& k : kinds) before[k.op] = f.fault_env.count(k.op);
        },
        !shape.first_attempts);
    auto run = f.engine->Wait(id, 10'000);
    ASSERT_TRUE(run.ok());
    ASSERT_EQ(run->phase, spec::RunPhase::kSucceeded);
    ExpectWholeOrNothing(f, *run, root_of(f, *run), "no fault");
    for (const auto& k : kinds) calls[k.op] = f.fault_env.count(k.op) - before[k.op];
  }
  EXPECT_GE(calls[Op::kRename], shape.own_outputs ? 2 : 5);  // staging, b.2, the manifest
  EXPECT_GE(calls[Op::kSync], 2);
  if (shape.own_outputs && shape.first_attempts) {
    // The manifest (its file and staging, once) before the rename, the run directory after:
    // no second fsync of outputs/.
    EXPECT_EQ(calls[Op::kSync], 3);
    EXPECT_EQ(calls[Op::kRename], 2);  // the manifest into place in staging; staging -> outputs
  }
  int failed_runs = 0;
  for (const auto& k : kinds) {
    for (int n = 1; n <= calls[k.op]; ++n) {
      std::string what = shape.name + ": call " + std::to_string(n) + " of kind " +
                         std::to_string(int(k.op)) + " fails with " + strerror(k.errnum);
      Fixture f(shape.name + "_" + std::to_string(int(k.op)) + "_" + std::to_string(n));
      auto id = f.RunToLastExit(
          setup(f), [&] { f.fault_env.FailNth(k.op, n, k.errnum); }, !shape.first_attempts);
      auto run = f.engine->Wait(id, 10'000);
      ASSERT_TRUE(run.ok()) << what;
      EXPECT_EQ(f.fault_env.failures(), 1) << what;
      ExpectWholeOrNothing(f, *run, root_of(f, *run), what);
      failed_runs += run->phase != spec::RunPhase::kSucceeded;
      // A later engine with a good Env finds nothing to finish and leaves the result as is.
      f.Restart(Env::Default());
      ASSERT_TRUE(f.engine->Recover().ok());
      auto after = f.sqlite->GetRun(id);
      EXPECT_EQ(after->phase, run->phase) << what;
      EXPECT_EQ(after->commit_state, run->commit_state) << what;
      ExpectWholeOrNothing(f, *after, root_of(f, *after), what + ", recovered");
      EXPECT_EQ(f.backend.undurable_launches, 0) << what;
    }
  }
  EXPECT_GT(failed_runs, 0);
}

TEST(CommitFaultTest, EveryFailedCallOfAWholeStagingCommitLeavesItWholeOrDiscarded) {
  FailEveryCallOfTheCommit({"own", true});
}

TEST(CommitFaultTest, EveryFailedCallOfAWholeCommitWithItsManifestFirstLeavesItWholeOrDiscarded) {
  FailEveryCallOfTheCommit({"first", true, /*first_attempts=*/true});
}

TEST(CommitFaultTest, EveryFailedCallOfAPerStepCommitLeavesItWholeOrDiscarded) {
  FailEveryCallOfTheCommit({"root", false});
}

// Holds the engine's turns (batches without a version) while closed: what happens meanwhile
// is gathered into its next turn.
class TurnGate : public store::StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  void Open() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = false;
    }
    cv_.notify_all();
  }
  //! True once a turn waits at the closed gate.
  bool WaitHeld() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return held_; });
  }
  Status Apply(store::Batch* b) override {
    if (b->versions.empty()) {
      std::unique_lock<std::mutex> lock(mu_);
      if (closed_) {
        held_ = true;
        cv_.notify_all();
        cv_.wait(lock, [&] { return !closed_; });
        held_ = false;
      }
    }
    return StoreWrapper::Apply(b);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool closed_ = false;  // GUARDED_BY(mu_)
  bool held_ = false;    // GUARDED_BY(mu_)
};

// Runs that end in one turn are committed by one pass of the committer, their rows in one
// batch: a run whose commit fails takes back its own output rows, never those of the runs
// committed beside it.
TEST(CommitFaultTest, AFailedCommitKeepsTheRowsOfTheRunsCommittedBesideIt) {
  std::string dir = FreshDir("beside");
  auto sqlite = store::OpenSqliteStore(dir + "/state");
  ASSERT_TRUE(sqlite.ok());
  TurnGate gate(sqlite->get());
  FaultEnv env;
  env.FailPaths(Op::kRename, "/broken/", EIO);  // that run's publication fails
  FakeBackend backend;
  EngineOptions opts;
  opts.state_dir = dir + "/state";
  opts.env = &env;
  Engine engine(&gate, &backend, Hooks{}, opts);
  ASSERT_TRUE(engine.Start().ok());
  auto one_step = [&](const std::string& name) {
    return Parse("apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata:\n  name: " + name +
                 "\n  namespace: risk\nspec:\n  data:\n    output:\n      uri: file://" + dir +
                 "/" + name + "\n  pipeline:\n    - {name: s, command: [s]}\n");
  };
  // The first run's end is held at the gate while the others' exits queue behind it; the
  // broken one among them, so that good runs are committed before and after it.
  std::vector<std::string> names = {"first", "good-1", "good-2", "broken", "good-3", "good-4"};
  std::map<std::string, std::string> ids;  // name -> workload id
  for (const auto& name : names) {
    auto id = engine.Submit(one_step(name), "alice");
    ASSERT_TRUE(id.ok()) << id.error().ToString();
    ids[name] = *id;
  }
  std::map<std::string, std::string> attempts;  // run id -> its attempt
  for (size_t n = 1; n <= names.size(); ++n) {
    auto l = backend.WaitLaunch(n);
    ASSERT_TRUE(WriteFileAtomic(l.env.at("RSL_OUTPUT") + "/out.txt", "x").ok());
    attempts[l.env.at("RSL_RUN_ID")] = l.attempt_id;
  }
  ASSERT_EQ(attempts.size(), names.size());
  gate.Close();
  backend.Succeed(attempts[store::RunIdFor(ids["first"])]);
  ASSERT_TRUE(gate.WaitHeld());
  for (size_t k = 1; k < names.size(); ++k)
    backend.Succeed(attempts[store::RunIdFor(ids[names[k]])]);
  gate.Open();
  for (const auto& name : names) {
    auto run = engine.Wait(ids[name], 10'000);
    ASSERT_TRUE(run.ok()) << name;
    auto artifacts = sqlite->get()->ListArtifacts(run->id);
    ASSERT_TRUE(artifacts.ok());
    if (name == "broken") {
      EXPECT_EQ(run->phase, spec::RunPhase::kFailed);
      EXPECT_EQ(run->commit_state, store::kCommitDiscarded);
      EXPECT_TRUE(artifacts->empty());
      continue;
    }
    EXPECT_EQ(run->phase, spec::RunPhase::kSucceeded) << name << ": " << run->failure_message;
    ASSERT_EQ(artifacts->size(), 1u) << name;
    EXPECT_EQ((*artifacts)[0].uri, dir + "/" + name + "/s") << name;
    EXPECT_EQ(*ReadFile(dir + "/" + name + "/s/out.txt"), "x") << name;
  }
  engine.Stop();
}

TEST(StoreFaultTest, AFailedTransactionIsRetriedAndNothingActsBeforeItIsDurable) {
  // Count the transactions of a run, then fail each one once in turn: the engine retries the
  // same batch, launches nothing it has not recorded, and the run ends as without faults.
  int applies = 0;
  {
    Fixture f("store_count");
    int before = f.failing->applies();
    auto id = f.RunToLastExit(ThreeSteps(""), [] {});
    ASSERT_EQ(f.engine->Wait(id, 10'000)->phase, spec::RunPhase::kSucceeded);
    applies = f.failing->applies() - before;
  }
  ASSERT_GE(applies, 5);
  int fired = 0;
  for (int n = 2; n <= applies; ++n) {  // the first is Submit's: see the next test
    std::string what = "transaction " + std::to_string(n) + " fails once";
    Fixture f("store_" + std::to_string(n));
    f.failing->FailNthApply(n);
    auto id = f.RunToLastExit(ThreeSteps(""), [] {});
    auto run = f.engine->Wait(id, 10'000);
    ASSERT_TRUE(run.ok()) << what;
    // Exits that arrive close together may share a turn: a run can take a transaction less.
    EXPECT_LE(f.failing->failures(), 1) << what;
    fired += f.failing->failures();
    ExpectWholeOrNothing(f, *run, run->run_dir + "/outputs", what);
    EXPECT_EQ(run->phase, spec::RunPhase::kSucceeded) << what;
    EXPECT_EQ(f.backend.launch_count(), 4u) << what;  // no attempt started twice
    EXPECT_EQ(f.backend.undurable_launches, 0) << what;
  }
  EXPECT_GE(fired, applies - 3);
}

TEST(StoreFaultTest, SubmitReportsAFailedTransactionAndStartsNothing) {
  Fixture f("store_submit");
  f.failing->FailNthApply(1);
  auto id = f.engine->Submit(ThreeSteps(""), "alice");
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.error().code, codes::kIoError);
  EXPECT_TRUE(f.sqlite->ListRuns(store::RunFilter{})->empty());
  EXPECT_EQ(f.backend.launch_count(), 0u);
}

TEST(StoreFaultTest, AStoreThatStaysDownStopsTheEngineCleanlyAndRecoveryFinishes) {
  // The store fails from the record of `a`'s exit on: `c` must not start, and Stop() must
  // return although the batch never becomes durable. A new engine recovers the run.
  Fixture f("store_down");
  auto id = f.engine->Submit(ThreeSteps(""), "alice");
  ASSERT_TRUE(id.ok());
  auto l1 = f.backend.WaitLaunch(1);
  auto l2 = f.backend.WaitLaunch(2);
  f.failing->FailNthApply(1, /*sticky=*/true);
  for (const auto& l : {l1, l2}) {
    EXPECT_TRUE(WriteFileAtomic(l.env.at("RSL_OUTPUT") + "/out.txt", l.step).ok());
    f.backend.Succeed(l.attempt_id);
  }
  for (int i = 0; i < 200 && f.failing->failures() < 2; ++i) usleep(10'000);
  ASSERT_GE(f.failing->failures(), 2);  // tried, and retried
  f.engine->Stop();
  EXPECT_EQ(f.backend.launch_count(), 2u);  // nothing acted on the undurable exits
  auto steps = f.sqlite->ListSteps(store::RunIdFor(*id));
  ASSERT_TRUE(steps.ok());
  for (const auto& s : *steps) EXPECT_NE(s.phase, spec::StepPhase::kSucceeded) << s.name;
  f.failing->Heal();
  f.Restart(Env::Default());
  ASSERT_TRUE(f.engine->Recover().ok());
  // The attempts' exits were never recorded: the backend is asked again (adopted).
  ASSERT_TRUE(f.backend.WaitAdopted(2));
  for (const auto& l : f.backend.adopted()) f.backend.Succeed(l.attempt_id);
  auto c = f.backend.WaitLaunch(3);
  ASSERT_EQ(c.step, "c");
  EXPECT_TRUE(WriteFileAtomic(c.env.at("RSL_OUTPUT") + "/out.txt", "c").ok());
  f.backend.Succeed(c.attempt_id);
  auto run = f.engine->Wait(*id, 10'000);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->phase, spec::RunPhase::kSucceeded);
  EXPECT_EQ(*ReadFile(run->run_dir + "/outputs/b/out.txt"), "b");
  EXPECT_EQ(f.backend.undurable_launches, 0);
}

TEST(StoreFaultTest, ACommitWhoseFinalRecordFailsIsFinishedByRecovery) {
  // The outputs are renamed and the manifest written, but the SUCCEEDED record cannot be
  // stored: the run stays "committing", and recovery completes the commit (idempotently).
  // Transactions after the last exit: its turn (with the decision to commit), the end.
  int remaining = 0;
  {
    Fixture f("final_count");
    int at_last = 0;
    auto id = f.RunToLastExit(ThreeSteps(""), [&] { at_last = f.failing->applies(); });
    ASSERT_EQ(f.engine->Wait(id, 10'000)->phase, spec::RunPhase::kSucceeded);
    remaining = f.failing->applies() - at_last;
  }
  ASSERT_EQ(remaining, 2);
  Fixture f("final");
  std::string id = f.RunToLastExit(ThreeSteps(""), [&] {
    f.failing->FailNthApply(remaining, /*sticky=*/true);  // the terminal record
  });
  for (int i = 0; i < 500 && f.failing->failures() < 1; ++i) usleep(10'000);
  ASSERT_GE(f.failing->failures(), 1);
  f.engine->Stop();
  auto stuck = f.sqlite->GetRun(id);
  EXPECT_EQ(stuck->phase, spec::RunPhase::kRunning);
  EXPECT_EQ(stuck->commit_state, store::kCommitCommitting);
  f.failing->Heal();
  f.Restart(Env::Default());
  ASSERT_TRUE(f.engine->Recover().ok());
  auto run = f.engine->Wait(id, 10'000);
  ASSERT_TRUE(run.ok());
  ExpectWholeOrNothing(f, *run, run->run_dir + "/outputs", "recovered commit");
  EXPECT_EQ(run->phase, spec::RunPhase::kSucceeded);
  EXPECT_TRUE(Has(f.Reasons(run->id), "Recovered"));
}

}  // namespace
}  // namespace rsl::engine
