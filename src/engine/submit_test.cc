// Group commit of submissions (docs/engine.md "Submissions"): concurrent Submit calls share
// one store transaction, each returns only once that transaction is durable, and a failed
// transaction fails every submission in it, none of them recorded. The store's transactions
// are held at a gate, so which submissions share one is decided by the test, not by timing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <functional>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "base/codes.h"
#include "base/strings.h"
#include "engine/engine.h"
#include "engine/engine_internal.h"
#include "engine/testing.h"
#include "spec/parse.h"
#include "store/store.h"

namespace rsl::engine {
namespace {

using testing::FakeBackend;
using testing::FakeClock;

std::string FreshDir(const std::string& name) {
  std::string dir = ::testing::TempDir() + "submit_test_" + name + "_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

spec::Workload ThreeSteps() {
  auto r = spec::ParseWorkload(
      "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata:\n  name: load\n"
      "  namespace: risk\nspec:\n  pipeline:\n"
      "    - {name: a, command: [a]}\n"
      "    - {name: b, command: [b], dependsOn: [a]}\n"
      "    - {name: c, command: [c], dependsOn: [b]}\n",
      "test.yaml");
  EXPECT_TRUE(r.ok()) << (r.errors.empty() ? "" : r.errors[0].ToString());
  return r.workload;
}

// Submissions' transactions (those inserting versions) wait while the gate is closed; from
// the `fail_from`-th of them on (1-based, 0 = never) they fail with IO_ERROR, applying
// nothing. Every other transaction (the engine loop's) goes through.
class GatedStore : public store::StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  void SetGate(bool open) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_ = open;
    }
    cv_.notify_all();
  }
  void FailSubmitsFrom(int n) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_from_ = n;
  }
  int submit_applies() {
    std::lock_guard<std::mutex> lock(mu_);
    return submit_applies_;
  }
  Status Apply(store::Batch* b) override {
    if (!b->versions.empty()) {
      std::unique_lock<std::mutex> lock(mu_);
      int n = ++submit_applies_;
      cv_.wait(lock, [&] { return open_; });
      if (fail_from_ > 0 && n >= fail_from_) {
        return Error(codes::kIoError, "cannot commit the store transaction: disk I/O error");
      }
      if (races_ > 0) {
        // Another process commits the same id between the lookup and this transaction.
        --races_;
        store::Batch other;
        other.versions.push_back(b->versions[0]);
        other.versions[0].name = "someone-else";
        Status s = StoreWrapper::Apply(&other);
        if (!s.ok()) return s;
        raced_.push_back(b->versions[0].id);
      }
    }
    return StoreWrapper::Apply(b);
  }
  // The next `n` submissions' ids are committed by "another process" first.
  void Race(int n) {
    std::lock_guard<std::mutex> lock(mu_);
    races_ = n;
  }
  std::vector<std::string> raced() {
    std::lock_guard<std::mutex> lock(mu_);
    return raced_;
  }
  // The next `n` versions looked up are there already (an earlier process's ids).
  void ClaimTaken(int n) {
    std::lock_guard<std::mutex> lock(mu_);
    claim_ = n;
  }
  void FailLookups(bool fail) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_lookups_ = fail;
  }
  std::vector<std::string> claimed() {
    std::lock_guard<std::mutex> lock(mu_);
    return claimed_;
  }
  Result<store::WorkloadVersion> GetVersion(const std::string& id) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (fail_lookups_) return Error(codes::kIoError, "disk I/O error");
      if (claim_ > 0) {
        --claim_;
        claimed_.push_back(id);
        store::WorkloadVersion v;
        v.id = id;
        return v;
      }
    }
    return StoreWrapper::GetVersion(id);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = true;                  // GUARDED_BY(mu_)
  int fail_from_ = 0;                 // GUARDED_BY(mu_)
  int submit_applies_ = 0;            // GUARDED_BY(mu_)
  int claim_ = 0;                     // GUARDED_BY(mu_)
  bool fail_lookups_ = false;         // GUARDED_BY(mu_)
  std::vector<std::string> claimed_;  // GUARDED_BY(mu_)
  int races_ = 0;                     // GUARDED_BY(mu_)
  std::vector<std::string> raced_;    // GUARDED_BY(mu_)
};

struct Fixture {
  explicit Fixture(const std::string& name, Hooks hooks = {}) : dir(FreshDir(name)) {
    auto s = store::OpenSqliteStore(dir);
    EXPECT_TRUE(s.ok());
    sqlite = std::move(*s);
    gated = std::make_unique<GatedStore>(sqlite.get());
    EngineOptions opts;
    opts.state_dir = dir;
    opts.env = &clock;
    engine = std::make_unique<Engine>(gated.get(), &backend, std::move(hooks), opts);
    EXPECT_TRUE(engine->Start().ok());
  }
  ~Fixture() { engine.reset(); }

  // Submits `n` workloads from n threads with the gate closed: the first takes the store
  // alone and waits at the gate, the others queue behind it. Returns once all n wait
  // (stats().submits_queued == n); `join` then opens the gate and collects the results.
  void SubmitHeld(int n) {
    gated->SetGate(false);
    results.assign(size_t(n), Error(codes::kInternal, "not returned"));
    spec::Workload w = ThreeSteps();
    for (int i = 0; i < n; ++i) {
      threads.emplace_back([this, w, i] { results[size_t(i)] = engine->Submit(w, "tester"); });
    }
    // No time bound that a loaded machine could break: the queue is a fact, polled.
    for (int k = 0; k < 60000 && engine->stats().submits_queued < n; ++k) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_EQ(engine->stats().submits_queued, n);
  }
  void OpenAndJoin() {
    gated->SetGate(true);
    for (auto& t : threads) t.join();
    threads.clear();
  }

  std::string dir;
  FakeClock clock;
  FakeBackend backend;
  std::unique_ptr<store::Store> sqlite;
  std::unique_ptr<GatedStore> gated;
  std::unique_ptr<Engine> engine;
  std::vector<std::thread> threads;
  std::vector<Result<std::string>> results;
};

TEST(SubmitGroupCommitTest, ConcurrentSubmitsAreDurableInFewerTransactions) {
  Fixture f("group");
  constexpr int kSubmits = 8;
  f.SubmitHeld(kSubmits);
  f.OpenAndJoin();
  // The first went alone; the seven queued behind it went in one transaction.
  Engine::Stats stats = f.engine->stats();
  EXPECT_EQ(stats.submits, kSubmits);
  EXPECT_EQ(stats.submit_commits, 2);
  EXPECT_EQ(stats.submits_queued, 0);
  EXPECT_EQ(f.gated->submit_applies(), 2);
  // Every acknowledged submission is in the store: its version (numbered once each), its
  // run and its three steps.
  std::set<std::string> ids;
  for (const auto& r : f.results) {
    ASSERT_TRUE(r.ok()) << r.error().ToString();
    ids.insert(*r);
    auto run = f.sqlite->GetRun(*r);
    ASSERT_TRUE(run.ok()) << run.error().ToString();
    auto steps = f.sqlite->ListSteps(run->id);
    ASSERT_TRUE(steps.ok());
    EXPECT_EQ(steps->size(), 3u);
  }
  EXPECT_EQ(ids.size(), size_t(kSubmits));
  auto versions = f.sqlite->ListVersions("risk", "load");
  ASSERT_TRUE(versions.ok());
  ASSERT_EQ(versions->size(), size_t(kSubmits));
  for (size_t k = 0; k < versions->size(); ++k) {
    EXPECT_EQ((*versions)[k].version, int64_t(k + 1));
    EXPECT_TRUE(ids.count((*versions)[k].id));
  }
}

TEST(SubmitGroupCommitTest, AFailedTransactionFailsEverySubmissionInIt) {
  Fixture f("fail");
  constexpr int kSubmits = 6;
  f.gated->FailSubmitsFrom(2);  // the first (alone) succeeds, the group of five fails
  f.SubmitHeld(kSubmits);
  f.OpenAndJoin();
  int ok = 0;
  std::string acknowledged;
  for (const auto& r : f.results) {
    if (r.ok()) {
      ++ok;
      acknowledged = *r;
      continue;
    }
    EXPECT_EQ(r.error().code, codes::kIoError);
    EXPECT_EQ(r.error().message,
              "the submission was not recorded (the store failed the transaction holding 5 "
              "submissions; none of them was recorded): cannot commit the store transaction: "
              "disk I/O error");
    EXPECT_EQ(r.error().hint, "submit it again");
  }
  EXPECT_EQ(ok, 1);
  Engine::Stats stats = f.engine->stats();
  EXPECT_EQ(stats.submits, 1);
  EXPECT_EQ(stats.submit_commits, 1);
  // No half-recorded group: only the acknowledged one is in the store.
  auto versions = f.sqlite->ListVersions("risk", "load");
  ASSERT_TRUE(versions.ok());
  ASSERT_EQ(versions->size(), 1u);
  EXPECT_EQ((*versions)[0].id, acknowledged);
  auto runs = f.sqlite->ListRuns(store::RunFilter{});
  ASSERT_TRUE(runs.ok());
  EXPECT_EQ(runs->size(), 1u);
  // The store heals: the next submission is recorded, numbered after the acknowledged one.
  f.gated->FailSubmitsFrom(0);
  auto again = f.engine->Submit(ThreeSteps(), "tester");
  ASSERT_TRUE(again.ok()) << again.error().ToString();
  auto v = f.sqlite->GetVersion(*again);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->version, 2);
}

// Ids follow the clock: one an earlier process drew in the same second (a restart) can
// come again. The store has it: the submission draws the next instead of failing at the
// commit, past as many as a burst of submissions left there.
TEST(SubmitGroupCommitTest, AnIdTheStoreHasIsDrawnAnew) {
  Fixture f("taken");
  f.gated->ClaimTaken(3);
  auto id = f.engine->Submit(ThreeSteps(), "tester");
  ASSERT_TRUE(id.ok()) << id.error().ToString();
  std::vector<std::string> claimed = f.gated->claimed();
  ASSERT_EQ(claimed.size(), 3u);
  std::set<std::string> distinct(claimed.begin(), claimed.end());
  EXPECT_EQ(distinct.size(), 3u);
  EXPECT_EQ(distinct.count(*id), 0u) << *id;
  EXPECT_TRUE(f.sqlite->GetVersion(*id).ok());
  // Each draw follows the one before (same width, so the strings sort as the values do).
  for (size_t k = 1; k < claimed.size(); ++k) EXPECT_LT(claimed[k - 1], claimed[k]);
  EXPECT_LT(claimed.back(), *id);
  // 2,000 taken in a row (a controller that took 2,000 submissions in its last second).
  f.gated->ClaimTaken(2000);
  auto past = f.engine->Submit(ThreeSteps(), "tester");
  ASSERT_TRUE(past.ok()) << past.error().ToString();
  EXPECT_EQ(f.gated->claimed().size(), 2003u);
  EXPECT_LT(f.gated->claimed().back(), *past);
  // A lookup that fails (not "not found") fails the submission: nothing is recorded.
  f.gated->FailLookups(true);
  auto failed = f.engine->Submit(ThreeSteps(), "tester");
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().code, codes::kIoError);
  f.gated->FailLookups(false);
  auto runs = f.sqlite->ListRuns({});
  ASSERT_TRUE(runs.ok());
  EXPECT_EQ(runs->size(), 2u);  // the two above
}

// Two processes on one store (two `seedctl run` at once) can draw the same id in the same
// second: the store refuses the second commit of it (CONFLICT naming the id, nothing
// written) and the submission is drawn and committed again, under the next id.
TEST(SubmitGroupCommitTest, AnIdAnotherProcessCommitsFirstIsDrawnAgain) {
  Fixture f("raced");
  f.gated->Race(2);
  auto id = f.engine->Submit(ThreeSteps(), "tester");
  ASSERT_TRUE(id.ok()) << id.error().ToString();
  std::vector<std::string> raced = f.gated->raced();
  ASSERT_EQ(raced.size(), 2u);
  EXPECT_LT(raced[0], raced[1]);
  EXPECT_LT(raced[1], *id);
  for (const auto& r : raced) EXPECT_EQ(f.sqlite->GetVersion(r)->name, "someone-else") << r;
  auto v = f.sqlite->GetVersion(*id);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->name, "load");
  EXPECT_EQ(v->version, 1);  // the refused tries numbered nothing
  auto runs = f.sqlite->ListRuns({});
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);  // the other process's versions have no runs here
  EXPECT_EQ((*runs)[0].id, store::RunIdFor(*id));
  // A store that keeps refusing gives up after kMaxSubmitTries, with the store's error.
  f.gated->Race(kMaxSubmitTries);
  auto refused = f.engine->Submit(ThreeSteps(), "tester");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, codes::kConflict);
  EXPECT_TRUE(StartsWith(refused.error().value, "wl-")) << refused.error().ToString();
}

// What admission sees of a workload submitted as a shared object (the controller's and
// `seedctl run`'s way): that object itself, not a copy of it.
class SeenWorkload : public AdmissionCheck {
 public:
  std::string name() const override { return "seen"; }
  Status Check(const RunInfo& run, AdmissionReport*) override {
    std::lock_guard<std::mutex> lock(mu_);
    seen_ = run.workload;
    cv_.notify_all();
    return Status::Ok();
  }
  const spec::Workload* WaitSeen() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(60), [&] { return seen_ != nullptr; });
    return seen_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  const spec::Workload* seen_ = nullptr;  // GUARDED_BY(mu_)
};

TEST(SubmitGroupCommitTest, ASharedWorkloadIsRunWithoutACopy) {
  auto seen = std::make_shared<SeenWorkload>();
  Hooks hooks;
  hooks.admission.push_back(seen);
  Fixture f("shared", std::move(hooks));
  auto w = std::make_shared<const spec::Workload>(ThreeSteps());
  auto id = f.engine->Submit(w, "tester");
  ASSERT_TRUE(id.ok()) << id.error().ToString();
  EXPECT_EQ(seen->WaitSeen(), w.get());
  EXPECT_EQ(w->pipeline.steps.size(), 3u);  // read, never moved from
  // No workload at all is refused, not dereferenced.
  auto none = f.engine->Submit(std::shared_ptr<const spec::Workload>(), "tester");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, codes::kInvalidArgument);
}

}  // namespace
}  // namespace rsl::engine
