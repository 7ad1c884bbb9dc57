// The server-sent event streams against a fake Service whose workload changes between reads:
// what each read emits, and when a stream ends.
#include "api/events_stream.h"

#include <gtest/gtest.h>

#include "api/fake_service_test_util.h"

namespace rsl::api {
namespace {

// A workload whose phase, steps and events the test sets; ChangeSeq counts the changes.
class ChangingService : public testing::FakeService {
 public:
  Result<Json> GetWorkload(const std::string& id) override {
    ++reads;
    if (id != "wl-20260101-0000000a") return FakeService::GetWorkload(id);
    Json w = Obj(id, "risk");
    w["status"]["phase"] = phase;
    w["status"]["steps"] = Json::array();
    for (const auto& [name, p] : steps)
      w["status"]["steps"].push_back({{"name", name}, {"phase", p}});
    return w;
  }
  Result<Json> Events(const std::string&) override { return Json{{"items", events}}; }
  Result<Json> ListWorkloads(const std::vector<std::string>&, const std::string&) override {
    Json items = Json::array();
    for (const auto& [id, p] : list) {
      items.push_back({{"metadata", {{"id", id}}}, {"status", {{"phase", p}}}});
    }
    return Json{{"items", items}};
  }
  int64_t ChangeSeq() override { return change; }

  void Change() { ++change; }
  void AddEvent(const std::string& reason) {
    events.push_back({{"seq", events.size() + 1}, {"reason", reason}});
    Change();
  }

  std::string phase = "RUNNING";
  std::vector<std::pair<std::string, std::string>> steps = {{"prep", "RUNNING"},
                                                            {"train", "PENDING"}};
  std::map<std::string, std::string> list = {{"wl-1", "RUNNING"}};
  Json events = Json::array();
  int64_t change = 0;
  int reads = 0;
};

WatchOptions Immediate() {
  WatchOptions o;
  o.poll = std::chrono::milliseconds(0);
  o.refresh = std::chrono::hours(1);  // only changes cause reads
  o.keep_alive = std::chrono::hours(1);
  o.slow_read_factor = 0;
  return o;
}

std::string Pull(StreamSource& s, StreamSource::State* state = nullptr) {
  std::string out;
  auto st = s.Next(1 << 16, &out);
  if (state) *state = st;
  return out;
}

TEST(SseEventTest, IsOneEventWithOneLineOfJson) {
  EXPECT_EQ(SseEvent("log", {{"text", "a\nb"}}), "event: log\ndata: {\"text\":\"a\\nb\"}\n\n");
}

TEST(WorkloadWatchTest, StartsWithTheObjectThenSendsOnlyWhatChanged) {
  ChangingService svc;
  svc.AddEvent("Started");
  WorkloadWatch w(&svc, "wl-20260101-0000000a", {}, Immediate());
  StreamSource::State state;
  std::string first = Pull(w, &state);
  EXPECT_EQ(state, StreamSource::State::kWait);
  EXPECT_EQ(first.rfind("event: workload\ndata: {", 0), 0u) << first;
  EXPECT_NE(first.find("event: event\ndata: {\"reason\":\"Started\",\"seq\":1}\n\n"),
            std::string::npos)
      << first;

  // Nothing changed: no read, nothing sent.
  int reads = svc.reads;
  EXPECT_EQ(Pull(w), "");
  EXPECT_EQ(svc.reads, reads);

  svc.steps[0].second = "SUCCEEDED";
  svc.AddEvent("Succeeded");
  EXPECT_EQ(Pull(w),
            "event: step\ndata: {\"name\":\"prep\",\"phase\":\"SUCCEEDED\"}\n\n"
            "event: event\ndata: {\"reason\":\"Succeeded\",\"seq\":2}\n\n");

  svc.phase = "FAILED";
  svc.Change();
  std::string last = Pull(w, &state);
  EXPECT_NE(last.find("event: status\ndata: {"), std::string::npos) << last;
  EXPECT_NE(last.find("\"phase\":\"FAILED\""), std::string::npos) << last;
  EXPECT_NE(last.find("event: end\ndata: {\"phase\":\"FAILED\"}\n\n"), std::string::npos) << last;
  EXPECT_EQ(state, StreamSource::State::kDone);
}

TEST(WorkloadWatchTest, SendsOnlyTheLatestEventsAtTheStart) {
  ChangingService svc;
  for (int i = 0; i < 10; ++i) svc.AddEvent("Progress");
  WatchOptions o = Immediate();
  o.initial_events = 3;
  WorkloadWatch w(&svc, "wl-20260101-0000000a", {}, o);
  std::string first = Pull(w);
  EXPECT_EQ(first.find("\"seq\":7}"), std::string::npos) << first;
  EXPECT_NE(first.find("\"seq\":8}"), std::string::npos) << first;
  EXPECT_NE(first.find("\"seq\":10}"), std::string::npos) << first;
  svc.AddEvent("Progress");
  EXPECT_EQ(Pull(w), "event: event\ndata: {\"reason\":\"Progress\",\"seq\":11}\n\n");
}

TEST(WorkloadWatchTest, FollowsAStepLogAndEndsWhenTheRunAndTheLogHaveEnded) {
  ChangingService svc;
  svc.phase = "SUCCEEDED";
  std::atomic<int> calls{0};
  std::vector<std::unique_ptr<StepLog>> logs;
  logs.push_back(std::make_unique<testing::GrowingLog>("train", &calls));
  WorkloadWatch w(&svc, "wl-20260101-0000000a", std::move(logs), Immediate());
  std::string all;
  StreamSource::State state = StreamSource::State::kMore;
  for (int i = 0; i < 10 && state != StreamSource::State::kDone; ++i) all += Pull(w, &state);
  EXPECT_EQ(state, StreamSource::State::kDone);
  EXPECT_NE(all.find("event: log\ndata: {\"step\":\"train\",\"text\":\"line 1\\n\"}\n\n"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("\"text\":\"line 3\\n\""), std::string::npos) << all;
  const std::string last =
      "event: logEnd\ndata: {\"step\":\"train\"}\n\n"
      "event: end\ndata: {\"phase\":\"SUCCEEDED\"}\n\n";
  ASSERT_GE(all.size(), last.size());
  EXPECT_EQ(all.substr(all.size() - last.size()), last);
}

TEST(WorkloadWatchTest, FollowsSeveralLogsOneAfterTheOtherAndMarksTheEndOfEach) {
  ChangingService svc;  // still RUNNING: the stream goes on after the logs have ended
  std::atomic<int> prep_calls{0}, train_calls{0};
  std::vector<std::unique_ptr<StepLog>> logs;
  logs.push_back(std::make_unique<testing::GrowingLog>("prep", &prep_calls));
  logs.push_back(std::make_unique<testing::GrowingLog>("train", &train_calls));
  WorkloadWatch w(&svc, "wl-20260101-0000000a", std::move(logs), Immediate());
  std::string all;
  for (int i = 0; i < 20; ++i) all += Pull(w);
  size_t prep_end = all.find("event: logEnd\ndata: {\"step\":\"prep\"}\n\n");
  size_t train_first = all.find("{\"step\":\"train\",\"text\":\"line 1\\n\"}");
  size_t train_end = all.find("event: logEnd\ndata: {\"step\":\"train\"}\n\n");
  ASSERT_NE(prep_end, std::string::npos) << all;
  ASSERT_NE(train_first, std::string::npos) << all;
  ASSERT_NE(train_end, std::string::npos) << all;
  EXPECT_LT(all.find("\"text\":\"line 3\\n\""), prep_end) << all;  // prep's log whole first
  EXPECT_LT(prep_end, train_first) << all;
  EXPECT_LT(train_first, train_end) << all;
  EXPECT_EQ(all.find("event: end"), std::string::npos) << all;  // the run has not ended
}

TEST(WorkloadWatchTest, AGoneWorkloadIsAnErrorThatEndsTheStream) {
  ChangingService svc;
  WorkloadWatch w(&svc, "wl-20260101-000000ff", {}, Immediate());
  StreamSource::State state;
  std::string out = Pull(w, &state);
  EXPECT_EQ(out.rfind("event: error\ndata: {\"code\":\"NOT_FOUND\"", 0), 0u) << out;
  EXPECT_EQ(state, StreamSource::State::kDone);
}

TEST(WorkloadWatchTest, SendsAKeepAliveAfterSilence) {
  ChangingService svc;
  WatchOptions o = Immediate();
  o.keep_alive = std::chrono::milliseconds(0);
  WorkloadWatch w(&svc, "wl-20260101-0000000a", {}, o);
  Pull(w);
  EXPECT_EQ(Pull(w), ": keep-alive\n\n");
}

TEST(WorkloadWatchTest, WaitsLongerAfterASlowRead) {
  ChangingService svc;
  WatchOptions o = Immediate();
  o.slow_read_factor = 1000000;  // any read is "slow": the next is far away
  WorkloadWatch w(&svc, "wl-20260101-0000000a", {}, o);
  Pull(w);
  int reads = svc.reads;
  svc.Change();
  EXPECT_EQ(Pull(w), "");
  EXPECT_EQ(svc.reads, reads);
}

TEST(WorkloadListWatchTest, SaysReadyThenSendsNewAndChangedLines) {
  ChangingService svc;
  WorkloadListWatch w(&svc, {"risk"}, "", Immediate());
  EXPECT_EQ(Pull(w), "event: ready\ndata: {\"count\":1}\n\n");
  EXPECT_EQ(Pull(w), "");
  svc.list["wl-2"] = "PENDING";
  svc.Change();
  EXPECT_EQ(Pull(w),
            "event: workload\ndata: {\"metadata\":{\"id\":\"wl-2\"},\"status\":{\"phase\":"
            "\"PENDING\"}}\n\n");
  svc.list["wl-1"] = "SUCCEEDED";
  svc.Change();
  EXPECT_EQ(Pull(w),
            "event: workload\ndata: {\"metadata\":{\"id\":\"wl-1\"},\"status\":{\"phase\":"
            "\"SUCCEEDED\"}}\n\n");
}

// The stream follows the newest list_window workloads only (newest first: here by id, the
// fake's items have no creation time): a change further down is not read, let alone sent.
TEST(WorkloadListWatchTest, FollowsOnlyTheNewestWindow) {
  ChangingService svc;
  svc.list = {{"wl-1", "RUNNING"}, {"wl-2", "RUNNING"}, {"wl-3", "RUNNING"}};
  WatchOptions o = Immediate();
  o.list_window = 2;
  WorkloadListWatch w(&svc, {"risk"}, "", o);
  EXPECT_EQ(Pull(w), "event: ready\ndata: {\"count\":2}\n\n");
  svc.list["wl-1"] = "SUCCEEDED";  // the oldest: outside the window
  svc.Change();
  EXPECT_EQ(Pull(w), "");
  svc.list["wl-3"] = "SUCCEEDED";
  svc.Change();
  EXPECT_EQ(Pull(w),
            "event: workload\ndata: {\"metadata\":{\"id\":\"wl-3\"},\"status\":{\"phase\":"
            "\"SUCCEEDED\"}}\n\n");
}

// Regression (the API fuzzer): a byte that is not UTF-8 in what a stream sends (a step name,
// an event's message, a list item) made the JSON dump throw on the stream's thread, which has
// nothing to catch it and would have ended the controller. It goes out replaced (U+FFFD).
TEST(WorkloadWatchTest, BytesThatAreNotUtf8GoOutReplacedAndTheStreamGoesOn) {
  ChangingService svc;
  svc.steps = {
      {"pr\xff"
       "ep",
       "RUNNING"}};
  svc.events.push_back({{"seq", 1}, {"reason", "Started"}, {"message", "bad \xc3("}});
  WorkloadWatch w(&svc, "wl-20260101-0000000a", {}, Immediate());
  StreamSource::State state;
  std::string first;
  ASSERT_NO_THROW(first = Pull(w, &state));
  EXPECT_EQ(state, StreamSource::State::kWait);
  EXPECT_NE(first.find("pr\xef\xbf\xbd"
                       "ep"),
            std::string::npos)
      << first;
  EXPECT_NE(first.find("\"message\":\"bad \xef\xbf\xbd(\""), std::string::npos) << first;
  svc.steps[0].second = "SUCCEEDED";
  svc.Change();
  std::string next;
  ASSERT_NO_THROW(next = Pull(w));
  EXPECT_NE(next.find("\"phase\":\"SUCCEEDED\""), std::string::npos) << next;

  ChangingService list_svc;
  WorkloadListWatch lw(&list_svc, {"risk"}, "", Immediate());
  EXPECT_EQ(Pull(lw), "event: ready\ndata: {\"count\":1}\n\n");
  list_svc.list["wl-\xfe"] = "PENDING";
  list_svc.Change();
  std::string item;
  ASSERT_NO_THROW(item = Pull(lw));
  EXPECT_NE(item.find("wl-\xef\xbf\xbd"), std::string::npos) << item;
}

}  // namespace
}  // namespace rsl::api
