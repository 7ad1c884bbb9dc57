// The store's paged reads against the in-memory defaults (Store::ListRunsPage,
// ListStepsPage, CountSteps... over ListRuns and ListSteps): runs by keyset, newest first;
// a run's steps by pipeline index, counted by phase.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "base/test_util.h"
#include "store/store.h"
#include "store/store_test_util.h"

namespace rsl::store {
namespace {

using testing::NewRunBatch;
using testing::StartedEvent;
using testing::StepRow;

// The page query against the in-memory default (Store::ListRunsPage over ListRuns): the same
// pages, newest first with ties broken by workload id, filtered by namespace, name, phase and
// label, and paged by cursor so that the pages together are the list, each run once.
class DefaultPaging : public StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  Result<std::vector<Run>> ListRunsPage(const RunPageQuery& q) override {
    return Store::ListRunsPage(q);
  }
  Result<int64_t> CountRuns(const RunPageQuery& q) override { return Store::CountRuns(q); }
};

TEST(StoreTest, RunPagesByKeysetAsTheDefaultDoes) {
  rsl::testing::TempDir tmp("store_test_pages");
  auto store = OpenSqliteStore(tmp.Sub("state"));
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  for (int i = 0; i < 12; ++i) {
    char id[32];
    std::snprintf(id, sizeof(id), "wl-20240615-%08x", i);
    Batch b = NewRunBatch(id, i % 3 == 0 ? "fraud" : "churn");
    b.versions[0].namespace_ = b.runs[0].namespace_ = i % 2 ? "risk" : "ads";
    b.versions[0].labels = {{"app.kubernetes.io/team", i % 4 ? "a\"b" : "c"}};
    b.runs[0].created_at = 1000 + i / 3;  // three runs per millisecond: ties
    b.runs[0].phase = i % 5 ? spec::RunPhase::kSucceeded : spec::RunPhase::kFailed;
    ASSERT_TRUE((*store)->Apply(&b).ok());
  }
  DefaultPaging slow(store->get());
  std::vector<RunPageQuery> queries(6);
  queries[1].namespace_ = "risk";
  queries[2].name = "churn";
  queries[2].namespace_ = "ads";
  queries[3].phase = "FAILED";
  queries[4].label_key = "app.kubernetes.io/team";
  queries[4].label_value = "a\"b";
  queries[5].namespace_ = "nobody";
  for (size_t n = 0; n < queries.size(); ++n) {
    RunPageQuery q = queries[n];
    auto all = slow.ListRunsPage(q);
    ASSERT_TRUE(all.ok());
    auto count = (*store)->CountRuns(q);
    ASSERT_TRUE(count.ok()) << count.error().ToString();
    EXPECT_EQ(*count, static_cast<int64_t>(all->size())) << "query " << n;
    EXPECT_EQ(*count, *slow.CountRuns(q));
    std::vector<std::string> paged;
    q.limit = 5;
    for (int pages = 0; pages < 10; ++pages) {
      auto page = (*store)->ListRunsPage(q);
      ASSERT_TRUE(page.ok()) << page.error().ToString();
      auto expected = slow.ListRunsPage(q);
      ASSERT_EQ(page->size(), expected->size()) << "query " << n << " page " << pages;
      for (size_t k = 0; k < page->size(); ++k) {
        EXPECT_EQ((*page)[k].workload_id, (*expected)[k].workload_id);
        paged.push_back((*page)[k].workload_id);
      }
      if (page->size() < 5) break;
      q.before_created_at = page->back().created_at;
      q.before_workload_id = page->back().workload_id;
    }
    std::vector<std::string> whole;
    for (const auto& r : *all) whole.push_back(r.workload_id);
    EXPECT_EQ(paged, whole) << "query " << n;
  }
  EXPECT_EQ(slow.ListRunsPage({})->size(), 12u);
  EXPECT_EQ(*(*store)->CountRuns(queries[3]), 3);  // i = 0, 5, 10
  // Newest first, ties by id descending.
  auto first = (*store)->ListRunsPage({});
  ASSERT_EQ(first->size(), 12u);
  EXPECT_EQ((*first)[0].workload_id, "wl-20240615-0000000b");
  EXPECT_EQ((*first)[11].workload_id, "wl-20240615-00000000");
}

// Everything a Store answers from ListSteps/ListEvents by default, to hold the SQL against.
class DefaultStepReads : public StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  Result<std::vector<Step>> ListStepsPage(const StepPageQuery& q) override {
    return Store::ListStepsPage(q);
  }
  Result<std::map<std::string, int64_t>> CountSteps(const std::string& run_id) override {
    return Store::CountSteps(run_id);
  }
  Result<int64_t> CountEvents(const std::string& run_id) override {
    return Store::CountEvents(run_id);
  }
  Result<std::vector<Event>> ListLastEvents(const std::string& run_id, int limit) override {
    return Store::ListLastEvents(run_id, limit);
  }
};

std::vector<std::string> NamesOf(const std::vector<Step>& steps) {
  std::vector<std::string> out;
  for (const auto& s : steps) out.push_back(s.name);
  return out;
}

// A 5,000-step run read a page at a time: the pages together are every step once, in pipeline
// order, also while steps change phase between two pages (the cursor is the pipeline index,
// which a step keeps); the counts and the filtered reads are what the in-memory default
// makes of ListSteps.
TEST(StoreTest, StepsPageByIndexAndCountByPhase) {
  rsl::testing::TempDir tmp("store_test_step_pages");
  auto store = OpenSqliteStore(tmp.Sub("state"));
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  Batch b = NewRunBatch("wl-20240615-0000abcd", "big");
  const std::string run = b.runs[0].id;
  b.steps.clear();
  constexpr int kSteps = 5000;
  // Names not in index order ("s10" < "s9"), so the order is the index's, not the name's.
  for (int i = 0; i < kSteps; ++i) {
    Step s = StepRow(run, "s" + std::to_string(i), i, spec::StepPhase::kPending);
    if (i % 7 == 0) s.phase = spec::StepPhase::kSucceeded;
    if (i % 97 == 0) s.phase = spec::StepPhase::kFailed;
    if (i % 500 == 3) {
      s.phase = spec::StepPhase::kRunning;
      s.attempts = 1;
      s.attempt_id = run + "/" + s.name + "/1";
    }
    if (s.phase != spec::StepPhase::kPending) s.started_at = 2000 + i;
    b.steps.push_back(s);
  }
  ASSERT_TRUE((*store)->Apply(&b).ok());
  Batch events;
  for (int i = 0; i < 1200; ++i)
    events.events.push_back(StartedEvent(run, "s1", "e" + std::to_string(i)));
  ASSERT_TRUE((*store)->Apply(&events).ok());
  DefaultStepReads slow(store->get());

  auto counts = (*store)->CountSteps(run);
  ASSERT_TRUE(counts.ok()) << counts.error().ToString();
  EXPECT_EQ(*counts, *slow.CountSteps(run));
  int64_t total = 0;
  for (const auto& [phase, n] : *counts) total += n;
  EXPECT_EQ(total, kSteps);
  EXPECT_EQ(counts->at("RUNNING"), 10);

  // Pages of 700, with steps changing phase between them.
  std::vector<std::string> paged;
  StepPageQuery q;
  q.run_id = run;
  q.limit = 700;
  for (int pages = 0; pages < 20; ++pages) {
    auto page = (*store)->ListStepsPage(q);
    ASSERT_TRUE(page.ok()) << page.error().ToString();
    for (const auto& s : *page) paged.push_back(s.name);
    if (page->size() < 700u) break;
    q.after_index = page->back().index;
    Batch change;  // the next page's first step and one already read finish meanwhile
    for (int i : {q.after_index + 1, q.after_index - 5}) {
      Step s = StepRow(run, "s" + std::to_string(i), i, spec::StepPhase::kSucceeded);
      s.started_at = 9000;
      change.steps.push_back(s);
    }
    ASSERT_TRUE((*store)->Apply(&change).ok());
  }
  ASSERT_EQ(paged.size(), size_t{kSteps});
  for (int i = 0; i < kSteps; ++i) ASSERT_EQ(paged[size_t(i)], "s" + std::to_string(i));

  // Filtered reads against the default, after the changes.
  std::vector<StepPageQuery> queries(6);
  for (auto& one : queries) one.run_id = run;
  queries[0].phases = {spec::StepPhase::kFailed};
  queries[0].limit = 50;
  queries[1].phases = {spec::StepPhase::kRunning, spec::StepPhase::kFailed};
  queries[1].after_index = 1000;
  queries[2].started_only = true;
  queries[2].last_first = true;
  queries[2].limit = 1;
  queries[3].live_only = true;
  queries[4].last_first = true;
  queries[4].before_index = 4000;
  queries[4].limit = 30;
  queries[5].run_id = "run-nobody";
  for (size_t n = 0; n < queries.size(); ++n) {
    auto fast = (*store)->ListStepsPage(queries[n]);
    auto expected = slow.ListStepsPage(queries[n]);
    ASSERT_TRUE(fast.ok()) << fast.error().ToString();
    ASSERT_TRUE(expected.ok());
    EXPECT_EQ(NamesOf(*fast), NamesOf(*expected)) << "query " << n;
  }
  EXPECT_EQ((*store)->ListStepsPage(queries[0])->size(), 50u);
  EXPECT_EQ((*store)->ListStepsPage(queries[2])->front().name, "s4998");  // the last started
  EXPECT_EQ((*store)->ListStepsPage(queries[3])->size(), 10u);
  EXPECT_EQ((*store)->ListStepsPage(queries[4])->front().name, "s3999");

  // The last events of the run, oldest first, and their count.
  auto last = (*store)->ListLastEvents(run, 500);
  ASSERT_TRUE(last.ok()) << last.error().ToString();
  ASSERT_EQ(last->size(), 500u);
  EXPECT_EQ(last->front().message, "e700");
  EXPECT_EQ(last->back().message, "e1199");
  auto expected_last = slow.ListLastEvents(run, 500);
  ASSERT_TRUE(expected_last.ok());
  EXPECT_EQ(last->front().seq, expected_last->front().seq);
  EXPECT_EQ(*(*store)->CountEvents(run), 1201);  // NewRunBatch's Admitted event too
  EXPECT_EQ(*slow.CountEvents(run), 1201);
  EXPECT_EQ((*store)->ListLastEvents(run, 0)->size(), 1201u);
  EXPECT_EQ(*(*store)->CountEvents("run-nobody"), 0);
}

}  // namespace
}  // namespace rsl::store
