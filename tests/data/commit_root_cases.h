// The commit protocol of one shared output root on a store with conditional writes
// (engine/object_root.h), through the data layer's publisher: each case runs against a real
// S3 server (s3_commit_test.cc, Ceph) and against WebHDFS (hdfs_commit_test.cc). A case
// takes the test's directory, the publisher of a state directory, and the root's URI.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/codes.h"
#include "base/commit_manifest.h"
#include "base/file.h"
#include "data/catalog.h"
#include "data/storage.h"
#include "engine/engine.h"
#include "engine/object_root.h"
#include "engine/testing.h"
#include "runtime/data_hooks.h"
#include "spec/parse.h"
#include "store/store.h"

namespace rsl::commit_cases {

//! The publisher of a state directory whose catalog serves the root's scheme.
using PublisherFor = std::function<std::shared_ptr<runtime::DataPublisher>(const std::string&)>;

inline void ALiveLeaseMakesTheNextWaitAndAnExpiredOneIsTakenOver(const PublisherFor& publisher,
                                                                 const std::string& dir,
                                                                 const std::string& base) {
  using engine::LeaseJson;
  using engine::LeaseRecord;
  using engine::ObjectLease;
  using engine::ObjectLeaseUri;
  auto store = publisher(dir + "/state");
  (void)store->Remove(base);
  Env* env = Env::Default();
  auto first = ObjectLease::Acquire(store.get(), env, base, "run-a");
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  // Held and live: a second gives up after its wait, naming the holder.
  auto refused = ObjectLease::Acquire(store.get(), env, base, "run-b", {1500, 60'000});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, codes::kIoError);
  EXPECT_NE(refused.error().message.find("stayed locked by run run-a"), std::string::npos)
      << refused.error().message;
  // A waiter gets it once the holder releases it.
  std::atomic<bool> acquired{false};
  std::thread waiter([&] {
    auto lease = ObjectLease::Acquire(store.get(), env, base, "run-c");
    EXPECT_TRUE(lease.ok()) << lease.error().ToString();
    acquired = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_FALSE(acquired.load());
  (*first)->Release();
  waiter.join();
  EXPECT_TRUE(acquired.load());
  // A lease left by a killed controller (expired a minute ago) is taken over.
  LeaseRecord dead{"run-killed", "elsewhere:1", "t", env->NowMs() - 60'000};
  auto cur = store->ReadObject(ObjectLeaseUri(base));
  ASSERT_EQ(cur.status().code(), codes::kNotFound);  // run-c released its own on return
  ASSERT_TRUE(store->WriteObjectIf(ObjectLeaseUri(base), LeaseJson(dead), "").ok());
  auto next = ObjectLease::Acquire(store.get(), env, base, "run-d", {5'000, 60'000});
  ASSERT_TRUE(next.ok()) << next.error().ToString();
  EXPECT_EQ((*next)->took_over_from(), "run-killed");
  (*next)->Release();
  EXPECT_EQ(store->ReadObject(ObjectLeaseUri(base)).status().code(), codes::kNotFound);
}

inline spec::Workload Steps(const std::string& uri, const std::vector<std::string>& steps,
                            const std::string& policy = "replace") {
  std::string yaml =
      "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata:\n  name: shared\n"
      "  namespace: risk\nspec:\n  data:\n    output:\n      uri: " +
      uri + "\n      policy: " + policy + "\n  pipeline:\n";
  for (const auto& s : steps) yaml += "    - {name: " + s + ", command: [" + s + "]}\n";
  auto r = spec::ParseWorkload(yaml, "test.yaml");
  EXPECT_TRUE(r.ok()) << (r.errors.empty() ? "" : r.errors[0].ToString());
  return r.workload;
}

// One controller: its own state directory, store and engine, the real Env.
struct Controller {
  Controller(const PublisherFor& publisher_for, const std::string& dir) {
    auto s = store::OpenSqliteStore(dir + "/state");
    EXPECT_TRUE(s.ok());
    store = std::move(*s);
    publisher = publisher_for(dir + "/state");
    engine::EngineOptions opts;
    opts.state_dir = dir + "/state";
    engine::Hooks hooks;
    hooks.publisher = publisher;
    eng = std::make_unique<engine::Engine>(store.get(), &backend, hooks, opts);
    EXPECT_TRUE(eng->Start().ok());
  }
  std::string RunToEnd(const spec::Workload& w) {
    auto id = eng->Submit(w, "alice");
    EXPECT_TRUE(id.ok());
    for (size_t i = 0; i < w.pipeline.steps.size(); ++i) {
      auto l = backend.WaitLaunch(++launched);
      EXPECT_TRUE(WriteFileAtomic(l.env.at("RSL_OUTPUT") + "/who", l.env.at("RSL_RUN_ID")).ok());
      backend.Succeed(l.attempt_id);
    }
    auto run = eng->Wait(*id, 110'000);
    EXPECT_TRUE(run.ok());
    EXPECT_EQ(run->phase, spec::RunPhase::kSucceeded) << run->failure_message;
    return run->id;
  }
  engine::testing::FakeBackend backend;
  std::unique_ptr<store::Store> store;
  std::shared_ptr<runtime::DataPublisher> publisher;
  std::unique_ptr<engine::Engine> eng;
  size_t launched = 0;
};

inline void TwoControllersCommittingToOneRootLeaveOneRunsSetAndRecordTheOthers(
    const PublisherFor& publisher, const std::string& dir, const std::string& root) {
  Controller one(publisher, dir + "/one"), two(publisher, dir + "/two");
  (void)one.publisher->Remove(root);
  constexpr int kRounds = 5;
  std::vector<std::string> runs_one, runs_two;
  std::thread t1([&] {
    for (int i = 0; i < kRounds; ++i) runs_one.push_back(one.RunToEnd(Steps(root, {"a", "b"})));
  });
  std::thread t2([&] {
    for (int i = 0; i < kRounds; ++i) runs_two.push_back(two.RunToEnd(Steps(root, {"a", "c"})));
  });
  t1.join();
  t2.join();
  // The manifest names one run, and the root holds exactly its steps, each written by it.
  auto m = one.publisher->ReadObject(root + "/" + kCommitManifestName);
  ASSERT_TRUE(m.ok()) << m.error().ToString();
  auto manifest = ParseCommitManifest(m->bytes);
  ASSERT_TRUE(manifest.ok());
  const std::string last = manifest->run_id;
  bool from_one = std::count(runs_one.begin(), runs_one.end(), last) > 0;
  ASSERT_TRUE(from_one || std::count(runs_two.begin(), runs_two.end(), last) > 0) << last;
  // Read back with the data layer's own storage for the root (its datasource).
  auto catalog = data::Catalog::Open(dir + "/one/state");
  ASSERT_TRUE(catalog.ok());
  auto opened = data::OpenStorage(root, catalog->get());
  ASSERT_TRUE(opened.ok()) << opened.error().ToString();
  data::Storage* raw = opened->get();
  auto listed = raw->List(root);
  ASSERT_TRUE(listed.ok()) << listed.error().ToString();
  std::vector<std::string> names;
  for (const auto& o : *listed) {
    names.push_back(o.relative);
    auto who = raw->ReadTagged(o.uri);
    ASSERT_TRUE(who.ok());
    EXPECT_EQ(who->bytes, last) << o.uri;
  }
  EXPECT_EQ(names, from_one ? (std::vector<std::string>{"a/who", "b/who"})
                            : (std::vector<std::string>{"a/who", "c/who"}));
  EXPECT_EQ(raw->ReadTagged(engine::ObjectLeaseUri(root)).status().code(),
            codes::kDataSourceNotFound);
  // Every other run was replaced by exactly one later commit, which recorded it.
  std::multiset<std::string> superseded;
  for (auto* ctl : {&one, &two}) {
    for (const auto& id : ctl == &one ? runs_one : runs_two) {
      auto lineage = ctl->store->ListLineage(id);
      ASSERT_TRUE(lineage.ok());
      for (const auto& e : *lineage) {
        if (e.relation == "supersedes") superseded.insert(e.from);  // run -> the run it replaced
      }
    }
  }
  std::multiset<std::string> expected;
  for (const auto& id : runs_one) {
    if (id != last) expected.insert(id);
  }
  for (const auto& id : runs_two) {
    if (id != last) expected.insert(id);
  }
  EXPECT_EQ(superseded, expected);
}

inline void ARefuseRunIsRejectedWhileAnotherControllersRunIsInFlightAndAdmittedAfter(
    const PublisherFor& publisher, const std::string& dir, const std::string& root) {
  Controller one(publisher, dir + "/one"), two(publisher, dir + "/two");
  (void)one.publisher->Remove(root);
  // The first controller's run is in flight (its step launched, not ended): its claim is
  // an object under the root.
  auto first = one.eng->Submit(Steps(root, {"a"}, "refuse"), "alice");
  ASSERT_TRUE(first.ok());
  auto step = one.backend.WaitLaunch(++one.launched, 110'000);
  ASSERT_FALSE(step.attempt_id.empty());
  const std::string first_run = step.env.at("RSL_RUN_ID");
  auto claim = one.publisher->ReadObject(engine::ObjectClaimUri(root, first_run));
  ASSERT_TRUE(claim.ok()) << claim.error().ToString();
  // The second controller's refuse run is rejected, naming it.
  auto refused = two.eng->Submit(Steps(root, {"a"}, "refuse"), "bob");
  ASSERT_TRUE(refused.ok());
  auto rejected = two.eng->Wait(*refused, 110'000);
  ASSERT_TRUE(rejected.ok());
  EXPECT_EQ(rejected->phase, spec::RunPhase::kRejected);
  EXPECT_EQ(rejected->failure_code, codes::kOutputConflict);
  EXPECT_NE(rejected->failure_message.find("run " + first_run + " ("), std::string::npos)
      << rejected->failure_message;
  // The first ends: its claim is removed, and the second controller's next run is admitted.
  ASSERT_TRUE(WriteFileAtomic(step.env.at("RSL_OUTPUT") + "/who", first_run).ok());
  one.backend.Succeed(step.attempt_id);
  auto ended = one.eng->Wait(*first, 110'000);
  ASSERT_TRUE(ended.ok());
  EXPECT_EQ(ended->phase, spec::RunPhase::kSucceeded) << ended->failure_message;
  // Removed by the loop turn that ended it, a moment after the end is durable.
  Status gone = Error(codes::kInternal, "not read");
  for (int i = 0; i < 600 && gone.code() != codes::kNotFound; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    gone = one.publisher->ReadObject(engine::ObjectClaimUri(root, first_run)).status();
  }
  EXPECT_EQ(gone.code(), codes::kNotFound);
  const std::string next = two.RunToEnd(Steps(root, {"a"}, "refuse"));
  auto m = two.publisher->ReadObject(root + "/" + kCommitManifestName);
  ASSERT_TRUE(m.ok()) << m.error().ToString();
  EXPECT_EQ(ParseCommitManifest(m->bytes)->run_id, next);
  auto left = two.publisher->ListObjects(root + "/.rsl-output");
  ASSERT_TRUE(left.ok()) << left.error().ToString();
  EXPECT_TRUE(left->empty()) << (*left)[0];
}

}  // namespace rsl::commit_cases
